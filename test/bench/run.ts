/**
 * `npm run bench`: this library against redlock, redis-semaphore and a raw ioredis floor on the workloads
 * of issue 6, on redis-server processes of its own. Writes bench-results/RESULTS.md, throughput.svg and
 * results.json, and prints the report. Options: see bench-options.ts (`npm run bench -- --quick`).
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { parseBenchOptions, SLICES_PER_ROUND, type BenchOptions } from './bench-options';
import { startBenchServers, type BenchServers } from './bench-servers';
import {
  libraryEntry,
  rawEntry,
  redisSemaphoreEntry,
  redlockEntry,
  type Contestant,
  type ContestantEntry,
  type Topology,
} from './contestants';
import { describeMachine } from './machine';
import { markdownReport } from './report/markdown-report';
import type { BenchResults, Cell, Metrics } from './report/results';
import { evaluateTargets } from './report/targets';
import { throughputChart } from './report/throughput-chart';
import { runContended } from './workloads/contended.workload';
import { runMemory } from './workloads/memory.workload';
import { runParallel } from './workloads/parallel.workload';
import { runSerial } from './workloads/serial.workload';
import { WORKLOADS, type WorkloadSpec } from './workloads/workload-specs';
import { Samples } from './stats';

const ENTRIES: readonly ContestantEntry[] = [libraryEntry, redlockEntry, redisSemaphoreEntry, rawEntry];
const REPO_ROOT = path.join(__dirname, '..', '..');
/** Concurrency of the memory workload, as in parallel64. */
const MEMORY_CONCURRENCY = 64;

/** A contestant per topology, or why it could not be created (e.g. a store not built yet). */
type Lineup = Map<string, Contestant | Error>;

function log(message: string): void {
  process.stderr.write(`${message}\n`);
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

/** One contended measurement, as flat metrics (the command mix as `mix.<command>`). */
async function measureContended(workload: WorkloadSpec, contestant: Contestant, servers: BenchServers, key: string, durationMs: number): Promise<Metrics> {
  const { clientCommandMix, allCommandMix, ...figures } = await runContended(contestant, servers.single.url, key, workload.callers, workload.holdMs, durationMs);
  const metrics: Metrics = { ...figures };
  for (const [name, perAcquisition] of Object.entries(clientCommandMix)) metrics[`mix.${name}`] = perAcquisition;
  for (const [name, perAcquisition] of Object.entries(allCommandMix)) metrics[`all.${name}`] = perAcquisition;
  return metrics;
}

/** What one contestant did over the slices of a round. */
interface SliceTotals {
  cycles: number;
  elapsedMs: number;
  readonly latencies: Samples;
}

/**
 * One round of a serial or parallel workload: SLICES_PER_ROUND short slices per contestant, the contestants taking
 * turns slice by slice, so that a change of the machine's state (other processes, CPU frequency, idle
 * states: serial latency on a small VM swings by 2x) hits every contestant alike.
 */
async function measureSliced(
  workload: WorkloadSpec,
  entries: readonly ContestantEntry[],
  lineup: Lineup,
  round: number,
  durationMs: number,
  failed: (entry: ContestantEntry, error: Error) => void,
): Promise<Map<string, Metrics>> {
  const totals = new Map<string, SliceTotals>();
  for (let slice = 0; slice < SLICES_PER_ROUND; slice++) {
    for (const entry of rotated(entries, round * SLICES_PER_ROUND + slice)) {
      const contestant = lineup.get(entry.id) as Contestant;
      let total = totals.get(entry.id);
      if (!total) totals.set(entry.id, (total = { cycles: 0, elapsedMs: 0, latencies: new Samples() }));
      if (Number.isNaN(total.cycles)) continue;
      const key = `bench:r${round}:${workload.id}:${entry.id}`;
      try {
        const result =
          workload.kind === 'serial'
            ? await runSerial(contestant, key, durationMs / SLICES_PER_ROUND, total.latencies)
            : await runParallel(contestant, key, workload.callers, durationMs / SLICES_PER_ROUND);
        total.cycles += result.cycles;
        total.elapsedMs += result.elapsedMs;
      } catch (error) {
        total.cycles = NaN;
        failed(entry, error as Error);
      }
    }
  }
  const metrics = new Map<string, Metrics>();
  for (const [id, total] of totals) {
    if (Number.isNaN(total.cycles)) continue;
    const opsPerSec = (total.cycles * 1000) / total.elapsedMs;
    metrics.set(
      id,
      workload.kind === 'serial'
        ? { opsPerSec, cycles: total.cycles, p50Ms: total.latencies.percentile(0.5), p99Ms: total.latencies.percentile(0.99) }
        : { opsPerSec, cycles: total.cycles },
    );
  }
  return metrics;
}

/** Rotates the order each round, so no contestant always runs first (cold) or last (after the others). */
function rotated<T>(items: readonly T[], by: number): T[] {
  const shift = by % items.length;
  return [...items.slice(shift), ...items.slice(0, shift)];
}

async function runBench(options: BenchOptions, servers: BenchServers, signal: AbortSignal, lineups: Map<Topology, Lineup>): Promise<BenchResults> {
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

  for (const topology of new Set(workloads.map((workload) => workload.topology))) {
    const urls = topology === 'single' ? [servers.single.url] : servers.five.map((server) => server.url);
    log(`Connecting the contestants to ${urls.length} server(s)`);
    const lineup = await createLineup(ENTRIES, urls);
    lineups.set(topology, lineup);
    // Warm-up: JIT, connections, script caches; not measured.
    for (const [id, contestant] of lineup) {
      if (!(contestant instanceof Error)) await runParallel(contestant, `bench:warmup:${topology}:${id}`, 64, options.warmUpMs);
    }
  }

  for (let round = 0; round < options.rounds; round++) {
    for (const workload of workloads) {
      signal.throwIfAborted();
      const lineup = lineups.get(workload.topology) as Lineup;
      const cellOf = (entry: ContestantEntry): Cell => {
        let cell = cells.find((existing) => existing.workload === workload.id && existing.contestant === entry.id);
        if (!cell) cells.push((cell = { workload: workload.id, contestant: entry.id, rounds: [] }));
        return cell;
      };
      const failed = (entry: ContestantEntry, error: Error): void => {
        cellOf(entry).error = error.message.split('\n')[0];
        log(`[round ${round + 1}/${options.rounds}] ${workload.id} ${entry.label} failed: ${error.message.split('\n')[0]}`);
      };
      const report = (entry: ContestantEntry, metrics: Metrics): void => {
        cellOf(entry).rounds.push(metrics);
        const extra =
          workload.kind === 'contended'
            ? `, ${metrics.clientCommandsPerAcquisition.toFixed(2)} client / ${metrics.allCommandsPerAcquisition.toFixed(2)} all cmds per acq.`
            : '';
        log(`[round ${round + 1}/${options.rounds}] ${workload.id.padEnd(20)} ${entry.label.padEnd(26)} ${metrics.opsPerSec.toFixed(0).padStart(7)} ops/s${extra}`);
      };
      // Contestants that could not be created, or failed in an earlier round, sit out.
      const entries = ENTRIES.filter((entry) => {
        if (workload.kind === 'contended' && !entry.waits) return false;
        const contestant = lineup.get(entry.id);
        if (contestant instanceof Error || contestant === undefined) {
          cellOf(entry).error ??= contestant?.message.split('\n')[0] ?? 'not created';
          return false;
        }
        return cellOf(entry).error === undefined;
      });
      if (workload.kind !== 'contended') {
        const measured = await measureSliced(workload, entries, lineup, round, options.durationMs, failed);
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
          report(entry, await measureContended(workload, lineup.get(entry.id) as Contestant, servers, key, options.durationMs));
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
      results.memoryError = (error as Error).message.split('\n')[0];
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
