/** Options of LockTesting.holdElsewhere. */
export interface HoldElsewhereOptions {
  /**
   * How long the key stays held, in ms: the lease then runs out, unannounced, like that of an instance that
   * crashed holding it (waiters of the application find the key free when it ends). Without it, the lease
   * (of the module's ttl) is renewed, as a live holder's is, until the test calls release().
   */
  ttl?: number | undefined;
  /**
   * The holder's instance name, as `inspect()` reports it. Default `'another-instance'`; never the
   * application's own (the module's `instance`).
   */
  instance?: string | undefined;
  /** Holds one permit of a counting semaphore of this limit (as AcquireOptions `limit`). One key only. */
  limit?: number | undefined;
  /** Holds the key as a reader (`'read'`) or a writer (`'write'`, the default) of a read-write lock. One key only. */
  mode?: 'read' | 'write' | undefined;
}

/**
 * Keys held by another instance (LockTesting.holdElsewhere): the application finds them busy until the test
 * releases them, or until their `ttl` runs out. `await using` releases them at the end of the block.
 */
export interface HeldElsewhere extends AsyncDisposable {
  /** The keys, as given. */
  readonly keys: readonly string[];
  /** Who holds them, as `inspect()` reports it. */
  readonly instance: string;
  /** Fencing token of keys[0]: locks the application is granted later carry greater ones. */
  readonly fence: number;
  /** Fencing token per key. */
  readonly fences: Readonly<Record<string, number>>;
  /**
   * Releases them now, as that instance would: the release is announced, so a caller of the application
   * waiting for the key is woken at once. true when they were still held; false once their ttl had run out
   * or they were evicted (forceRelease). Idempotent.
   */
  release(): Promise<boolean>;
}
