/**
 * Prints the functions with the most self time in a V8 .cpuprofile (from node --cpu-prof), and the
 * share of each source file: `ts-node --transpile-only summarize-cpu-profile.ts <file> [top=30]`.
 */
import { readFileSync } from 'node:fs';

interface ProfileNode {
  readonly id: number;
  readonly callFrame: { readonly functionName: string; readonly url: string; readonly lineNumber: number };
  readonly children?: readonly number[];
}

interface CpuProfile {
  readonly nodes: readonly ProfileNode[];
  readonly samples: readonly number[];
  readonly timeDeltas: readonly number[];
}

function main(): void {
  const [file, topArg = '30'] = process.argv.slice(2);
  if (!file) throw new Error('usage: summarize-cpu-profile.ts <file.cpuprofile> [top]');
  const profile = JSON.parse(readFileSync(file, 'utf8')) as CpuProfile;
  const byId = new Map(profile.nodes.map((node) => [node.id, node]));
  const selfMicros = new Map<number, number>();
  profile.samples.forEach((id, index) =>
    selfMicros.set(id, (selfMicros.get(id) ?? 0) + (profile.timeDeltas[index] ?? 0)),
  );
  const total = [...selfMicros.values()].reduce((sum, value) => sum + value, 0);

  const byFunction = new Map<string, number>();
  const byFile = new Map<string, number>();
  for (const [id, micros] of selfMicros) {
    const frame = (byId.get(id) as ProfileNode).callFrame;
    const where = frame.url ? `${shortUrl(frame.url)}:${frame.lineNumber + 1}` : '(native)';
    const name = `${frame.functionName || '(anonymous)'}  ${where}`;
    byFunction.set(name, (byFunction.get(name) ?? 0) + micros);
    const fileKey = frame.url ? shortUrl(frame.url) : frame.functionName || '(native)';
    byFile.set(fileKey, (byFile.get(fileKey) ?? 0) + micros);
  }
  const print = (title: string, entries: Map<string, number>, top: number): void => {
    process.stdout.write(`\n${title} (total ${(total / 1000).toFixed(0)} ms sampled)\n`);
    for (const [name, micros] of [...entries].sort(([, a], [, b]) => b - a).slice(0, top)) {
      process.stdout.write(
        `${((micros / total) * 100).toFixed(1).padStart(5)}%  ${(micros / 1000).toFixed(0).padStart(6)} ms  ${name}\n`,
      );
    }
  };
  print('Self time by function', byFunction, Number(topArg));
  print('Self time by file', byFile, 25);
}

function shortUrl(url: string): string {
  return url
    .replace(/^file:\/\//, '')
    .replace(/^.*\/node_modules\//, 'node_modules/')
    .replace(/^.*\/work\/main\//, '');
}

main();
