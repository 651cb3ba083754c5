// Estimates when a busy key is likely free (Retry-After) from how long its recent @Locked holds lasted in this process.
import { Injectable } from '@nestjs/common';
import { LockNotAcquiredError } from '../errors';

/** How many recent holds of one key (or of one @Locked method) an estimate looks at. */
const RECENT_HOLDS = 8;
/**
 * How many keys keep a history (the least recently held is forgotten first): keys like `order:{id}` are
 * unbounded, and an estimate only needs the keys that are contended now.
 */
const MAX_KEYS = 1_000;

/** What an estimate may use about the busy call, besides its keys. */
export interface BusyCall {
  /** The @Locked method (its metadata object): its recent holds stand in for a key with no history. */
  readonly site: object;
  /** The call's `wait` budget in ms, for the error's message. */
  readonly wait: number;
}

/**
 * When is a busy key likely to be free? LockService only knows when the holder's lease ends, and a lease
 * is renewed while held: with a 10 s ttl, a route that holds for 1 s would tell clients to come back in up
 * to 10 s. So the @Locked edge (LockInterceptor and the provider-method runner, which see their own grant
 * and release times) records how long holds last, in this process, and estimates from that:
 *
 * - typical hold: the median of the key's last 8 holds; with no history for the key (keys like
 *   `order:{id}` are rarely reused), the median of the last 8 holds taken through the same @Locked method;
 * - holder in this process (its start is known): typical hold − time held so far (≥ 1 ms: an overdue
 *   holder is about to finish, or is stuck and its lease decides);
 * - holder elsewhere: one typical hold (when it began is not known, so the longer, safer side);
 * - several keys: the latest of them; bounded by the holder's remaining lease as Redis reported it; with
 *   nothing recorded, the remaining lease itself.
 *
 * Holds taken with LockService directly (withLock, acquire) are not seen: for those keys the estimate is
 * the remaining lease. One instance per application (LockModule provides it).
 */
@Injectable()
export class RetryAfterEstimator {
  private readonly keyHolds = new Map<string, number[]>();
  private readonly siteHolds = new WeakMap<object, number[]>();
  /** Keys held in this process through @Locked: since when, by how many (reentrant) holds. */
  private readonly active = new Map<string, { since: number; holds: number }>();

  /**
   * A @Locked call was granted `keys`; returns the function that ends the hold (idempotent). Reentrant
   * holds of a key already held are counted, not timed: the key's hold runs from its first grant to its
   * last release, and only an outermost call times its method. With `minHold`, a hold released sooner still
   * keeps the key until grant + minHold (left to expire), so it counts as lasting minHold.
   */
  holdStarted(keys: readonly string[], site: object, minHold = 0): () => void {
    const startedAt = performance.now();
    const outermost = keys.every((key) => !this.active.has(key));
    for (const key of keys) {
      const held = this.active.get(key);
      if (held) held.holds++;
      else this.active.set(key, { since: startedAt, holds: 1 });
    }
    let ended = false;
    return () => {
      if (ended) return;
      ended = true;
      const now = performance.now();
      for (const key of keys) {
        const held = this.active.get(key);
        if (!held || --held.holds > 0) continue;
        this.active.delete(key);
        this.rememberKey(key, Math.max(now - held.since, minHold));
      }
      if (outermost) remember(this.siteHolds, site, Math.max(now - startedAt, minHold));
    };
  }

  /**
   * The busy error a @Locked call reports: the same keys, its `wait` (so a one-attempt call says plainly
   * that the key is held), and `retryAfterMs` replaced by this estimate.
   */
  busyError(error: LockNotAcquiredError, call: BusyCall): LockNotAcquiredError {
    return new LockNotAcquiredError(
      error.keys,
      this.estimate(error.keys, error.retryAfterMs, call.site),
      error.waitedMs,
      {
        ...error.details,
        wait: error.wait ?? call.wait,
      },
    );
  }

  /** Milliseconds until `keys` are likely free; `leaseLeftMs` (0: unknown) bounds it and is the fallback. */
  estimate(keys: readonly string[], leaseLeftMs: number, site?: object): number {
    const now = performance.now();
    const siteTypical = site && median(this.siteHolds.get(site));
    let estimate: number | undefined;
    for (const key of keys) {
      const typical = median(this.keyHolds.get(key)) ?? siteTypical;
      if (typical === undefined) continue;
      const held = this.active.get(key);
      const left = held ? typical - (now - held.since) : typical;
      estimate = Math.max(estimate ?? 0, left);
    }
    if (estimate === undefined) return leaseLeftMs;
    if (leaseLeftMs > 0) estimate = Math.min(estimate, leaseLeftMs);
    return Math.max(1, Math.ceil(estimate));
  }

  private rememberKey(key: string, duration: number): void {
    const holds = this.keyHolds.get(key) ?? [];
    // Re-inserted, so the Map's order is least recently held first.
    this.keyHolds.delete(key);
    this.keyHolds.set(key, holds);
    holds.push(duration);
    if (holds.length > RECENT_HOLDS) holds.shift();
    if (this.keyHolds.size > MAX_KEYS) this.keyHolds.delete(this.keyHolds.keys().next().value as string);
  }
}

function remember(holds: WeakMap<object, number[]>, site: object, duration: number): void {
  let recent = holds.get(site);
  if (!recent) holds.set(site, (recent = []));
  recent.push(duration);
  if (recent.length > RECENT_HOLDS) recent.shift();
}

function median(values: readonly number[] | undefined): number | undefined {
  if (!values?.length) return undefined;
  const sorted = [...values].sort((a, b) => a - b);
  const middle = sorted.length >> 1;
  return sorted.length % 2 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2;
}
