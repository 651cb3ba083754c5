import type { BenchOptions } from '../bench-options';
import type { ContestantRole } from '../contestants';
import type { Machine } from '../machine';
import type { CensusCheck, ScriptInfo } from '../metering/script-census';
import { median } from '../stats';
import type { MemoryResult } from '../workloads/memory.workload';
import type { WorkloadId } from '../workloads/workload-specs';

/** The figures of one measurement, by name: opsPerSec, p50Ms, clientCommandsPerAcquisition, mix.evalsha, ... */
export type Metrics = Record<string, number>;

export interface ContestantInfo {
  readonly id: string;
  readonly label: string;
  readonly role: ContestantRole;
}

/** One workload × one contestant: every round's figures, or why it could not run. */
export interface Cell {
  readonly workload: WorkloadId;
  readonly contestant: string;
  readonly rounds: Metrics[];
  error?: string;
  /** Why the contestant sat this workload out by design (e.g. "not yet supported"): no figure, not a failure. */
  skipped?: string;
}

export interface BenchResults {
  readonly command: string;
  readonly options: BenchOptions;
  readonly machine: Machine;
  readonly contestants: readonly ContestantInfo[];
  readonly cells: readonly Cell[];
  /** What the script census found: each script's signature, and the check of the client-side counter. */
  census?: { readonly scripts: readonly ScriptInfo[]; readonly checks: readonly CensusCheck[] };
  memory?: MemoryResult;
  memoryError?: string;
  readonly startedAt: string;
  totalSeconds: number;
}

/** The median over rounds of every metric of a cell (a metric missing in a round counts as 0 there). */
export function medianMetrics(cell: Cell): Metrics {
  const names = new Set(cell.rounds.flatMap((round) => Object.keys(round)));
  const result: Metrics = {};
  for (const name of names) result[name] = median(cell.rounds.map((round) => round[name] ?? 0));
  return result;
}

export function findCell(results: BenchResults, workload: WorkloadId, contestant: string): Cell | undefined {
  return results.cells.find((cell) => cell.workload === workload && cell.contestant === contestant);
}

/** Median figures of a workload × contestant, undefined when it did not run. */
export function figures(results: BenchResults, workload: WorkloadId, contestant: string): Metrics | undefined {
  const cell = findCell(results, workload, contestant);
  return cell && cell.rounds.length > 0 ? medianMetrics(cell) : undefined;
}

/** The peer with the highest median ops/s on a workload (the raw baseline is not a peer). */
export function bestPeer(
  results: BenchResults,
  workload: WorkloadId,
): { contestant: ContestantInfo; opsPerSec: number } | undefined {
  const best = bestPeerBy(results, workload, 'opsPerSec', 'highest');
  return best && { contestant: best.contestant, opsPerSec: best.value };
}

/** The peer with the best median `metric` on a workload: the highest, or the lowest for a cost. */
export function bestPeerBy(
  results: BenchResults,
  workload: WorkloadId,
  metric: string,
  better: 'highest' | 'lowest',
): { contestant: ContestantInfo; value: number } | undefined {
  let best: { contestant: ContestantInfo; value: number } | undefined;
  for (const contestant of results.contestants) {
    if (contestant.role !== 'peer') continue;
    const value = figures(results, workload, contestant.id)?.[metric];
    if (value === undefined || Number.isNaN(value)) continue;
    if (!best || (better === 'highest' ? value > best.value : value < best.value)) best = { contestant, value };
  }
  return best;
}

/**
 * The contestants the targets are judged on: this library over a module-owned and over borrowed ioredis
 * clients (of the library's own copy of ioredis, and of an application's ioredis 5 and 6). The node-redis row is reported beside them, not judged: the targets are for the ioredis kinds.
 */
export const TARGET_CONTESTANTS: readonly string[] = [
  'library',
  'library-borrowed',
  'library-borrowed-ioredis5',
  'library-borrowed-ioredis6',
];

/** How the tables name each of ours in a ratio ("0.91× owned, 0.85× borrowed"). */
export function clientKind(id: string): string {
  switch (id) {
    case 'library-borrowed':
      return 'borrowed';
    case 'library-borrowed-ioredis5':
      return "app's ioredis 5";
    case 'library-borrowed-ioredis6':
      return "app's ioredis 6";
    default:
      return 'owned';
  }
}

/**
 * Contestants whose commands the client-side count cannot see (it hooks ioredis' Command): node-redis writes
 * its own. Their server-side figures (INFO: all commands, Redis CPU) stand; the client-side ones do not exist.
 */
export const UNCOUNTED_CLIENT_SIDE: readonly string[] = ['library-node-redis'];

export function ours(results: BenchResults): ContestantInfo[] {
  return results.contestants.filter((contestant) => TARGET_CONTESTANTS.includes(contestant.id));
}

/**
 * Ours ÷ the best peer on a workload, per client kind, and the one that counts: the worse of the two (the
 * lower ratio; for a cost, where lower is better, the higher one). Undefined when no peer or none of ours ran.
 */
export function oursVersusBestPeer(
  results: BenchResults,
  workload: WorkloadId,
  metric = 'opsPerSec',
  better: 'highest' | 'lowest' = 'highest',
):
  | {
      readonly peer: ContestantInfo;
      readonly each: { contestant: ContestantInfo; ratio: number }[];
      readonly worse: number;
    }
  | undefined {
  const best = bestPeerBy(results, workload, metric, better);
  if (!best) return undefined;
  const each = ours(results).flatMap((contestant) => {
    const value = figures(results, workload, contestant.id)?.[metric];
    return value === undefined || Number.isNaN(value) ? [] : [{ contestant, ratio: value / best.value }];
  });
  if (each.length === 0) return undefined;
  const ratios = each.map((item) => item.ratio);
  return { peer: best.contestant, each, worse: better === 'highest' ? Math.min(...ratios) : Math.max(...ratios) };
}
