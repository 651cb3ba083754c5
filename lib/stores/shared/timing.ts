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
