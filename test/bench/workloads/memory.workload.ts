import { spawn } from 'node:child_process';
import path from 'node:path';

export interface MemoryResult {
  readonly cycles: number;
  readonly concurrency: number;
  readonly seconds: number;
  /** Heap used after a full GC, before and after the cycles. */
  readonly heapBeforeMb: number;
  readonly heapAfterMb: number;
  readonly growthMb: number;
}

/** Gives up on the child after this long (it takes ~20-40 s for 1M cycles on 2 cores). */
const CHILD_TIMEOUT_MS = 180_000;

/**
 * Workload 5: 1M acquire/release cycles on unique keys through this library, in a child Node started with
 * --expose-gc (the benchmark itself runs without it), so the heap is read after real full collections and
 * holds nothing but the library and the loop.
 */
export function runMemory(
  url: string,
  cycles: number,
  concurrency: number,
  signal?: AbortSignal,
): Promise<MemoryResult> {
  const script = path.join(__dirname, 'memory-child.ts');
  const child = spawn(
    process.execPath,
    ['--expose-gc', '-r', 'ts-node/register/transpile-only', script, url, String(cycles), String(concurrency)],
    { stdio: ['ignore', 'pipe', 'pipe'], cwd: path.join(__dirname, '..', '..', '..') },
  );
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  return new Promise((resolve, reject) => {
    const stop = (): boolean => child.kill('SIGKILL');
    const timer = setTimeout(stop, CHILD_TIMEOUT_MS);
    signal?.addEventListener('abort', stop, { once: true });
    child.on('error', reject);
    child.on('exit', (code, exitSignal) => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', stop);
      const line = stdout.split('\n').find((text) => text.startsWith('RESULT '));
      if (code === 0 && line) resolve(JSON.parse(line.slice('RESULT '.length)) as MemoryResult);
      else reject(new Error(`memory workload failed (exit ${code ?? exitSignal}):\n${stderr.slice(-2000)}`));
    });
  });
}
