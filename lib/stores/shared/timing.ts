// How the Redis stores time a lease: its ttl in whole ms, the command timeout for it, and its validity less clock
// drift.
import type { MinReplicas } from '../../options/lock-options.interface';

/** What both Redis stores are made with (see createLockStore). */
export interface RedisStoreOptions {
  readonly driftFactor: number;
  /** Fixed per-command (per-node) timeout; by default derived from each call's ttl (see commandTimeoutFor). */
  readonly commandTimeout?: number;
  /**
   * A grant or renewal counts only once this many replicas acknowledged it (see NodeConnection.write); a
   * Redlock node whose replicas did not counts as failed.
   */
  readonly minReplicas?: MinReplicas;
}

/** Redlock's clock-drift allowance: a fraction of the ttl plus 2 ms for the timers' own granularity. */
export function clockDrift(ttl: number, driftFactor: number): number {
  return Math.round(ttl * driftFactor) + 2;
}

/**
 * How long one command may take before the store counts as unreachable: a fifth of the lease, between
 * 100 ms and 1 s, and never more than half the lease (so a renewal that hangs still leaves time to retry).
 * Without a ttl (release, ping) the upper bound applies.
 */
export function commandTimeoutFor(ttl: number | undefined): number {
  if (ttl === undefined) return 1_000;
  return Math.max(1, Math.min(Math.round(ttl / 2), Math.min(1_000, Math.max(100, Math.round(ttl / 5)))));
}

/** A lease's ttl as the scripts take it: whole milliseconds, at least 1. */
export function leaseTtl(ttl: number): number {
  return Math.max(1, Math.round(ttl));
}

/** A store's timing, from its options. */
export class StoreTiming {
  constructor(private readonly options: RedisStoreOptions) {}

  /** The command timeout for a call of this ttl (undefined: no ttl, e.g. release or ping). */
  timeout(ttl: number | undefined): number {
    return this.options.commandTimeout ?? commandTimeoutFor(ttl);
  }

  /**
   * Until when (performance.now()) a lease of `ttl` ms asked for at `startedAt` is valid: counted from before
   * the request was sent, minus clock drift, on the monotonic clock.
   */
  validUntil(startedAt: number, ttl: number): number {
    return startedAt + ttl - clockDrift(ttl, this.options.driftFactor);
  }
}
