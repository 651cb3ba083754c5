import type { BenchOptions } from '../bench-options';
import type { ContestantRole } from '../contestants';
import type { Machine } from '../machine';
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
}

export interface BenchResults {
  readonly command: string;
  readonly options: BenchOptions;
  readonly machine: Machine;
  readonly contestants: readonly ContestantInfo[];
  readonly cells: readonly Cell[];
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
export function bestPeer(results: BenchResults, workload: WorkloadId): { contestant: ContestantInfo; opsPerSec: number } | undefined {
  let best: { contestant: ContestantInfo; opsPerSec: number } | undefined;
  for (const contestant of results.contestants) {
    if (contestant.role !== 'peer') continue;
    const opsPerSec = figures(results, workload, contestant.id)?.opsPerSec;
    if (opsPerSec !== undefined && (!best || opsPerSec > best.opsPerSec)) best = { contestant, opsPerSec };
  }
  return best;
}
