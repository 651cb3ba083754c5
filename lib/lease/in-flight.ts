/**
 * Store commands of this service still in flight, so shutdown can let them finish before it closes the
 * store: a grant or a take-back written before the close must reach Redis, or a key stays locked for nobody.
 */
export class InFlight {
  private readonly pending = new Set<Promise<unknown>>();

  /** Returns `work` unchanged, counted until it settles. */
  track<T>(work: Promise<T>): Promise<T> {
    this.pending.add(work);
    const done = (): void => {
      this.pending.delete(work);
    };
    work.then(done, done);
    return work;
  }

  /** Resolves once everything tracked so far has settled (never rejects). */
  async settled(): Promise<void> {
    await Promise.allSettled([...this.pending]);
  }
}
