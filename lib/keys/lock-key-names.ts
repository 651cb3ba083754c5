// The store-level names of one lock (lease, fence, channel, marks), as the key namer derives them.

/** The store-level names of one lock, derived once from its key and the prefix. */
export interface LockKeyNames {
  /** The key as the user gave it. */
  readonly name: string;
  /** Where the lease lives (`SET NX PX`). */
  readonly lockKey: string;
  /** The fencing counter of this key; never expires. Shares lockKey's hash slot. */
  readonly fenceKey: string;
  /** The channel a release of this key is announced on. */
  readonly channel: string;
  /**
   * Beside a semaphore's or readers' set at lockKey: what the key is (`#kind`: `semaphore:<limit>` or
   * `read`) and each holder's fence. Shares lockKey's hash slot.
   */
  readonly permitsKey: string;
  /** A writer waiting behind readers records its token here, so that new readers queue behind it. Same slot. */
  readonly writerKey: string;
  /**
   * Set (with an expiry) when an attempt was refused by a lease at lockKey: the release of that lease is then
   * announced on `channel`, which a release nobody waits for skips. Shares lockKey's hash slot.
   */
  readonly awaitedKey: string;
}
