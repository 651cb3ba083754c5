// The least fence a grant may take: the clock of the host asking for it.

/**
 * This host's wall clock in µs (ms resolution), sent with every granting script as its fence floor (see
 * NEXT_FENCE): a fence is above both the key's counter and this, so it survives the counter's loss. The same
 * value goes to every node of a Redlock round, so that a quorum whose counters agree gives one fence. The clock
 * assumption is then about the hosts that run the library (docs/design.md, "Fences across data loss").
 */
export function fenceFloor(): number {
  return Date.now() * 1000;
}
