// How both Redis stores probe a node for health: a PING, timed, or the error it failed with.
import { roundMs } from '../store-health';

/** A probe's outcome: the round trip when it answered, else its error. */
export type ProbeResult =
  { readonly ok: true; readonly latencyMs: number } | { readonly ok: false; readonly error: unknown };

/** Runs `ping` (bounded by its own timeout) and times it, to a tenth of a millisecond; never rejects. */
export async function probe(ping: () => Promise<void>): Promise<ProbeResult> {
  const startedAt = performance.now();
  try {
    await ping();
    return { ok: true, latencyMs: roundMs(performance.now() - startedAt) };
  } catch (error) {
    return { ok: false, error };
  }
}
