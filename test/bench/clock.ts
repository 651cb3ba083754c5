/**
 * Milliseconds since the Unix epoch with sub-millisecond precision, on the monotonic clock: comparable with
 * the microsecond timestamps Redis puts on MONITOR lines (same machine, same system clock).
 */
export function epochNow(): number {
  return performance.timeOrigin + performance.now();
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
