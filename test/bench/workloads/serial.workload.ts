import type { Contestant } from '../contestants';
import type { Samples } from '../stats';

export interface SliceResult {
  readonly cycles: number;
  readonly elapsedMs: number;
}

/** Upper bound on cycles of one slice, whatever its duration: keeps the loop bounded. */
const MAX_CYCLES = 5_000_000;

/**
 * Workload 1: one caller, one key, acquire + release in a loop for `durationMs`; the latency of every
 * cycle is appended to `latencies`. A measurement is several such slices, interleaved with the other
 * contestants' (see run.ts).
 */
export async function runSerial(
  contestant: Contestant,
  key: string,
  durationMs: number,
  latencies: Samples,
): Promise<SliceResult> {
  const startedAt = performance.now();
  const deadline = startedAt + durationMs;
  let now = startedAt;
  let cycles = 0;
  while (now < deadline && cycles < MAX_CYCLES) {
    const cycleStart = now;
    const held = await contestant.lock(key);
    await held.release();
    now = performance.now();
    latencies.push(now - cycleStart);
    cycles++;
  }
  return { cycles, elapsedMs: now - startedAt };
}
