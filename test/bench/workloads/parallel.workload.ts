import type { Contestant } from '../contestants';
import type { SliceResult } from './serial.workload';

/** Upper bound on each caller's cycles, whatever the duration. */
const MAX_CYCLES_PER_CALLER = 1_000_000;

/**
 * Workload 2 (and 4 on five servers): `callers` concurrent callers, each on its own key, acquire + release
 * in a loop until `durationMs` has passed; the slice ends when the last caller is done.
 */
export async function runParallel(
  contestant: Contestant,
  keyPrefix: string,
  callers: number,
  durationMs: number,
): Promise<SliceResult> {
  const startedAt = performance.now();
  const deadline = startedAt + durationMs;
  let cycles = 0;
  const caller = async (key: string): Promise<void> => {
    for (let own = 0; own < MAX_CYCLES_PER_CALLER && performance.now() < deadline; own++) {
      const held = await contestant.lock(key);
      await held.release();
      cycles++;
    }
  };
  await Promise.all(Array.from({ length: callers }, (_, index) => caller(`${keyPrefix}:${index}`)));
  return { cycles, elapsedMs: performance.now() - startedAt };
}
