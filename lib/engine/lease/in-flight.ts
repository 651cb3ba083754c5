/**
 * Store commands of this service still in flight, so shutdown can let them finish before it closes the
 * store: a grant or a take-back written before the close must reach Redis, or a key stays locked for nobody.
 * Counted, not kept in a set: every acquisition is tracked, and a set's add and delete (with its table
 * growing and shrinking) cost on that hot path for what only shutdown reads.
 */
export class InFlight {
  private pending = 0;
  private idle: (() => void)[] = [];
  /** Bound once: no closure per tracked promise. */
  private readonly settledOne = (): void => {
    // Nobody waiting (all but shutdown): no new array for the waiters either.
    if (--this.pending > 0 || this.idle.length === 0) return;
    const idle = this.idle;
    this.idle = [];
    for (const resolve of idle) resolve();
  };

  /** Returns `work` unchanged, counted until it settles. */
  track<T>(work: Promise<T>): Promise<T> {
    this.pending++;
    work.then(this.settledOne, this.settledOne);
    return work;
  }

  /**
   * Resolves once nothing tracked is in flight (never rejects). Shutdown calls it after refusing new
   * attempts, so what is in flight then only winds down: attempts already sent (and the take-back of one
   * granted too late), hand-overs being dealt with, writers' withdrawals, and the deletions of leases already
   * known lost (every lease shutdown revokes among them), which nobody awaits.
   */
  settled(): Promise<void> {
    if (this.pending === 0) return Promise.resolve();
    return new Promise((resolve) => this.idle.push(resolve));
  }
}
