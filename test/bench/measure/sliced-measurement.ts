import { SLICES_PER_ROUND } from '../bench-options';
import type { Contestant, ContestantEntry } from '../contestants';
import type { Metrics } from '../report/results';
import { Samples } from '../stats';
import { runParallel } from '../workloads/parallel.workload';
import { runSerial } from '../workloads/serial.workload';
import type { WorkloadSpec } from '../workloads/workload-specs';
import { rotated } from './rotated';

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
export async function measureSliced(
  workload: WorkloadSpec,
  entries: readonly ContestantEntry[],
  contestantOf: (entry: ContestantEntry) => Contestant,
  round: number,
  durationMs: number,
  failed: (entry: ContestantEntry, error: Error) => void,
): Promise<Map<string, Metrics>> {
  const totals = new Map<string, SliceTotals>();
  for (let slice = 0; slice < SLICES_PER_ROUND; slice++) {
    for (const entry of rotated(entries, round * SLICES_PER_ROUND + slice)) {
      const contestant = contestantOf(entry);
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
        ? {
            opsPerSec,
            cycles: total.cycles,
            p50Ms: total.latencies.percentile(0.5),
            p99Ms: total.latencies.percentile(0.99),
          }
        : { opsPerSec, cycles: total.cycles },
    );
  }
  return metrics;
}
