/**
 * `npm run bench`: this library (over a module-owned and over a borrowed client) against redlock,
 * redis-semaphore and a raw ioredis floor on the workloads of issues 6 and 12, on redis-server processes of
 * its own. Writes bench-results/RESULTS.md, throughput.svg and results.json, and prints the report.
 * Options: see bench-options.ts (`npm run bench -- --quick`).
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { parseBenchOptions, type BenchOptions } from './bench-options';
import { startBenchServers, type BenchServers } from './bench-servers';
import {
  lentIoredis,
  libraryBorrowedEntry,
  libraryBorrowedIoredis5Entry,
  libraryBorrowedIoredis6Entry,
  libraryEntry,
  libraryNodeRedisEntry,
  rawEntry,
  redisSemaphoreEntry,
  redlockEntry,
  type Contestant,
  type ContestantEntry,
  type Topology,
} from './contestants';
import { describeMachine } from './machine';
import { rotated } from './measure/rotated';
import { measureSliced } from './measure/sliced-measurement';
import { measureTurns } from './measure/turns-measurement';
import { installClientCommandCounter } from './metering/client-command-counter';
import { runScriptCensus, type ScriptCensus } from './metering/script-census';
import { markdownReport } from './report/markdown-report';
import { UNCOUNTED_CLIENT_SIDE, type BenchResults, type Cell, type Metrics } from './report/results';
import { evaluateTargets } from './report/targets';
import { throughputChart } from './report/throughput-chart';
import { runMemory } from './workloads/memory.workload';
import { runParallel } from './workloads/parallel.workload';
import { WORKLOADS, type WorkloadSpec } from './workloads/workload-specs';

const ENTRIES: readonly ContestantEntry[] = [
  libraryEntry,
  libraryBorrowedEntry,
  libraryBorrowedIoredis5Entry,
  libraryBorrowedIoredis6Entry,
  libraryNodeRedisEntry,
  redlockEntry,
  redisSemaphoreEntry,
  rawEntry,
];
const REPO_ROOT = path.join(__dirname, '..', '..');
/** Concurrency of the memory workload, as in parallel64. */
const MEMORY_CONCURRENCY = 64;

/** A contestant per topology, or why it could not be created (e.g. a store not built yet). */
type Lineup = Map<string, Contestant | Error>;

function log(message: string): void {
  process.stderr.write(`${message}\n`);
}

function firstLine(error: Error): string {
  return error.message.split('\n')[0];
}

async function createLineup(entries: readonly ContestantEntry[], urls: readonly string[]): Promise<Lineup> {
  const lineup: Lineup = new Map();
  for (const entry of entries) {
    try {
      lineup.set(entry.id, await entry.create(urls));
    } catch (error) {
      log(`  ${entry.label} cannot run on ${urls.length} server(s): ${(error as Error).message}`);
      lineup.set(entry.id, error as Error);
    }
  }
  return lineup;
}

async function closeLineups(lineups: Iterable<Lineup>): Promise<void> {
  const closing: Promise<void>[] = [];
  for (const lineup of lineups) {
    for (const contestant of lineup.values()) if (!(contestant instanceof Error)) closing.push(contestant.close());
    lineup.clear();
  }
  await Promise.allSettled(closing);
}

/** The lineup's working contestants, with their entries. */
function working(lineup: Lineup): [ContestantEntry, Contestant][] {
  return ENTRIES.flatMap((entry) => {
    const contestant = lineup.get(entry.id);
    return contestant === undefined || contestant instanceof Error
      ? []
      : [[entry, contestant] as [ContestantEntry, Contestant]];
  });
}

/**
 * Why a contestant sits a workload out by design, or undefined when it runs it. Such a cell gets a
 * `skipped` note and no figure; a line says so once.
 */
function sitsOut(workload: WorkloadSpec, entry: ContestantEntry): string | undefined {
  if (workload.only && !workload.only.includes(entry.id)) return workload.onlyWhy ?? 'not in this workload';
  if (workload.kind === 'turns' && !entry.waits) return 'cannot wait';
  if (workload.limit > 1 && entry.semaphoreUnsupported !== undefined) return entry.semaphoreUnsupported;
  return undefined;
}

async function runBench(
  options: BenchOptions,
  servers: BenchServers,
  signal: AbortSignal,
  lineups: Map<Topology, Lineup>,
): Promise<BenchResults> {
  const startedAt = performance.now();
  const workloads = WORKLOADS.filter((workload) => options.workloads.includes(workload.id));
  const args = process.argv.slice(2);
  const results: BenchResults = {
    command: args.length > 0 ? `npm run bench -- ${args.join(' ')}` : 'npm run bench',
    options,
    machine: await describeMachine(servers.single),
    contestants: ENTRIES.map(({ id, label, role }) => ({ id, label, role })),
    cells: [],
    startedAt: new Date().toISOString(),
    totalSeconds: 0,
  };
  const cells = results.cells as Cell[];
  // The copies of ioredis an application lends (installed now if missing): their commands are counted too.
  installClientCommandCounter([lentIoredis('ioredis5').Command, lentIoredis('ioredis6').Command]);

  for (const topology of new Set(workloads.map((workload) => workload.topology))) {
    const urls = topology === 'single' ? [servers.single.url] : servers.five.map((server) => server.url);
    log(`Connecting the contestants to ${urls.length} server(s)`);
    const lineup = await createLineup(ENTRIES, urls);
    lineups.set(topology, lineup);
    // Warm-up: JIT, connections, script caches; not measured.
    for (const [entry, contestant] of working(lineup))
      await runParallel(contestant, `bench:warmup:${topology}:${entry.id}`, 64, options.warmUpMs);
  }

  // Which scripts each contestant runs, learnt under MONITOR before anything is measured (see script-census.ts).
  let census: ScriptCensus = { scripts: new Map(), checks: [] };
  const single = lineups.get('single');
  if (single && workloads.some((workload) => workload.kind === 'turns')) {
    log('Script census (MONITOR, not measured)');
    census = await runScriptCensus(working(single), servers.single.port, log);
    results.census = { scripts: [...census.scripts.values()], checks: census.checks };
  }

  const skipNoted = new Set<string>();
  for (let round = 0; round < options.rounds; round++) {
    for (const workload of workloads) {
      signal.throwIfAborted();
      const lineup = lineups.get(workload.topology) as Lineup;
      const tag = `[round ${round + 1}/${options.rounds}] ${workload.id.padEnd(20)}`;
      const cellOf = (entry: ContestantEntry): Cell => {
        let cell = cells.find((existing) => existing.workload === workload.id && existing.contestant === entry.id);
        if (!cell) cells.push((cell = { workload: workload.id, contestant: entry.id, rounds: [] }));
        return cell;
      };
      const failed = (entry: ContestantEntry, error: Error): void => {
        cellOf(entry).error = firstLine(error);
        log(`${tag} ${entry.label} failed: ${firstLine(error)}`);
      };
      const report = (entry: ContestantEntry, metrics: Metrics): void => {
        cellOf(entry).rounds.push(metrics);
        const extra =
          workload.kind === 'turns'
            ? `, ${metrics.clientCommandsPerAcquisition.toFixed(2)} client / ${metrics.allCommandsPerAcquisition.toFixed(2)} all cmds, ` +
              `${metrics.redisCpuUsPerAcquisition.toFixed(1)} µs Redis CPU per acq.` +
              (entry.role === 'library' && !UNCOUNTED_CLIENT_SIDE.includes(entry.id)
                ? `, ${metrics.acquireScriptsPerAcquisition.toFixed(2)} acquire scripts per acq.`
                : '')
            : '';
        log(`${tag} ${entry.label.padEnd(34)} ${metrics.opsPerSec.toFixed(0).padStart(7)} ops/s${extra}`);
      };
      const entries = ENTRIES.filter((entry) => {
        const why = sitsOut(workload, entry);
        if (why !== undefined) {
          // Contestants that merely cannot wait (the floor) are left out silently, as before; a missing
          // feature is said out loud, once, and recorded.
          if (workload.kind === 'turns' && !entry.waits) return false;
          cellOf(entry).skipped = why;
          if (!skipNoted.has(`${workload.id}:${entry.id}`)) {
            skipNoted.add(`${workload.id}:${entry.id}`);
            if (!workload.only) log(`${tag} ${entry.label}: ${why} — skipped, no figure`);
          }
          return false;
        }
        // Contestants that could not be created, or failed in an earlier round, sit out.
        const contestant = lineup.get(entry.id);
        if (contestant instanceof Error || contestant === undefined) {
          cellOf(entry).error ??= contestant ? firstLine(contestant) : 'not created';
          return false;
        }
        return cellOf(entry).error === undefined;
      });
      const contestantOf = (entry: ContestantEntry): Contestant => lineup.get(entry.id) as Contestant;
      if (workload.kind !== 'turns') {
        const measured = await measureSliced(workload, entries, contestantOf, round, options.durationMs, failed);
        for (const entry of entries) {
          const metrics = measured.get(entry.id);
          if (metrics) report(entry, metrics);
        }
        continue;
      }
      for (const entry of rotated(entries, round)) {
        signal.throwIfAborted();
        try {
          const key = `bench:r${round}:${workload.id}:${entry.id}`;
          report(
            entry,
            await measureTurns(workload, contestantOf(entry), servers.single.port, key, options.durationMs, census),
          );
        } catch (error) {
          failed(entry, error as Error);
        }
      }
    }
  }
  await closeLineups(lineups.values());

  if (options.memoryCycles > 0) {
    log(`Memory: ${options.memoryCycles.toLocaleString('en-US')} cycles of this library on unique keys...`);
    try {
      results.memory = await runMemory(servers.single.url, options.memoryCycles, MEMORY_CONCURRENCY, signal);
      log(`  heap growth ${results.memory.growthMb.toFixed(2)} MB in ${results.memory.seconds.toFixed(1)} s`);
    } catch (error) {
      results.memoryError = firstLine(error as Error);
      log(`  failed: ${(error as Error).message}`);
    }
  }
  results.totalSeconds = (performance.now() - startedAt) / 1000;
  return results;
}

function writeOutputs(results: BenchResults): string {
  const targets = evaluateTargets(results);
  const report = markdownReport(results, targets);
  const outDir = path.resolve(REPO_ROOT, results.options.outDir);
  mkdirSync(outDir, { recursive: true });
  writeFileSync(path.join(outDir, 'RESULTS.md'), report);
  writeFileSync(path.join(outDir, 'throughput.svg'), throughputChart(results));
  writeFileSync(path.join(outDir, 'results.json'), `${JSON.stringify(results, null, 2)}\n`);
  const shown = path.relative(REPO_ROOT, outDir).startsWith('..') ? outDir : path.relative(REPO_ROOT, outDir);
  log(`Wrote ${shown}/RESULTS.md, throughput.svg and results.json`);
  return report;
}

async function main(): Promise<void> {
  const options = parseBenchOptions(process.argv.slice(2));
  const aborter = new AbortController();
  const lineups = new Map<Topology, Lineup>();
  log('Starting redis-server processes (1 + 5)...');
  const servers = await startBenchServers();
  const interrupt = (signalName: NodeJS.Signals): void => {
    log(`\n${signalName}: stopping the servers`);
    aborter.abort(new Error(signalName));
    void closeLineups(lineups.values());
    void servers.stop().finally(() => process.exit(130));
  };
  process.once('SIGINT', interrupt);
  process.once('SIGTERM', interrupt);
  try {
    const results = await runBench(options, servers, aborter.signal, lineups);
    process.stdout.write(`\n${writeOutputs(results)}`);
  } finally {
    await closeLineups(lineups.values());
    await servers.stop();
    process.off('SIGINT', interrupt);
    process.off('SIGTERM', interrupt);
  }
}

main().then(
  () => process.exit(0),
  (error: unknown) => {
    process.stderr.write(`${error instanceof Error ? error.stack : String(error)}\n`);
    process.exit(1);
  },
);
