import { epochNow, sleep } from '../clock';
import type { HeldLock } from '../contestants';
import { Samples } from '../stats';

/** A span in which every caller but the holder(s) was waiting (epoch ms). */
export interface WaitingWindow {
  readonly from: number;
  readonly to: number;
}

export interface TurnsResult {
  readonly acquisitions: number;
  readonly elapsedMs: number;
  /** Time from a holder calling release() to the next caller's grant; only for a lock (limit 1). */
  readonly handovers: Samples;
  /** The longest any caller waited for one acquisition. */
  readonly longestWaitMs: number;
  /** Grants while `limit` callers already held the key: must be 0 (a broken lock would show here). */
  readonly overlaps: number;
  /** The most holders seen at once. */
  readonly maxHolders: number;
  /** Spans where all other callers waited (only for a lock whose critical section is ≥ 10 ms). */
  readonly windows: readonly WaitingWindow[];
}

/** A waiting window starts this long after a grant, so the previous holder has queued again. */
const WINDOW_START_MS = 5;
/** ... and ends this long before the holder's release. */
const WINDOW_END_MS = 1;
/** Shorter critical sections leave no waiting window worth measuring. */
const MIN_HOLD_FOR_WINDOWS_MS = 10;
/** Upper bound on each caller's acquisitions, whatever the duration. */
const MAX_ACQUISITIONS_PER_CALLER = 1_000_000;

/**
 * Workload 3: `callers` callers in this process take turns on one key, at most `limit` holding it at once,
 * each holding it for `holdMs` (a timer) or, with `holdMs` 0 (hot key), releasing it as soon as it is
 * granted, with nothing in between; they stop once `durationMs` has passed (callers still waiting then get
 * their turn and stop). Only the timing is measured here: Redis' side is metered by the caller, around it.
 */
export async function runTurns(
  acquire: (key: string) => Promise<HeldLock>,
  key: string,
  callers: number,
  holdMs: number,
  limit: number,
  durationMs: number,
): Promise<TurnsResult> {
  const handovers = new Samples();
  const windows: WaitingWindow[] = [];
  let longestWaitMs = 0;
  let acquisitions = 0;
  let overlaps = 0;
  let holders = 0;
  let maxHolders = 0;
  let lastReleaseAt: number | undefined;
  const keepWindows = limit === 1 && holdMs >= MIN_HOLD_FOR_WINDOWS_MS;

  const startedAt = epochNow();
  const deadline = startedAt + durationMs;
  const caller = async (): Promise<void> => {
    for (let own = 0; own < MAX_ACQUISITIONS_PER_CALLER && epochNow() < deadline; own++) {
      const requestedAt = epochNow();
      const held = await acquire(key);
      const grantedAt = epochNow();
      if (holders >= limit) overlaps++;
      holders++;
      maxHolders = Math.max(maxHolders, holders);
      acquisitions++;
      longestWaitMs = Math.max(longestWaitMs, grantedAt - requestedAt);
      if (limit === 1 && lastReleaseAt !== undefined) handovers.push(grantedAt - lastReleaseAt);
      // Hot key: no await between grant and release, so the critical section is truly empty.
      if (holdMs > 0) await sleep(holdMs);
      const releasingAt = holdMs > 0 ? epochNow() : grantedAt;
      holders--;
      lastReleaseAt = releasingAt;
      // Only while nobody has stopped yet are all other callers waiting.
      if (keepWindows && releasingAt < deadline)
        windows.push({ from: grantedAt + WINDOW_START_MS, to: releasingAt - WINDOW_END_MS });
      await held.release();
    }
  };
  await Promise.all(Array.from({ length: callers }, () => caller()));
  return { acquisitions, elapsedMs: epochNow() - startedAt, handovers, longestWaitMs, overlaps, maxHolders, windows };
}

/** Commands sent inside the windows, per waiter and per second of window (`sentAtMs` ascending); NaN without windows. */
export function commandsPerWaiterSecond(
  sentAtMs: ArrayLike<number>,
  windows: readonly WaitingWindow[],
  waiters: number,
): number {
  const usable = windows.filter((window) => window.to > window.from);
  const windowMs = usable.reduce((total, window) => total + (window.to - window.from), 0);
  if (windowMs === 0 || waiters === 0) return NaN;
  let inside = 0;
  let next = 0;
  for (let index = 0; index < sentAtMs.length; index++) {
    const at = sentAtMs[index];
    while (next < usable.length && usable[next].to < at) next++;
    if (next === usable.length) break;
    if (at >= usable[next].from) inside++;
  }
  return (inside * 1000) / windowMs / waiters;
}
