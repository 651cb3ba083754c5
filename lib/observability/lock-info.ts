/** What `LockService.inspect(key)` says about a key that is held. */
export interface LockInfo {
  /** The key as given, without the prefix. */
  readonly key: string;
  /**
   * A plain lock is a 'mutex'; 'semaphore' and 'read-write' are keys taken with `limit` or `mode`; 'leader' is
   * a leadership's key (`leader:<name>`, see LockService.lead), whose one holder is the leader and whose fence
   * is its term.
   */
  readonly kind: 'mutex' | 'semaphore' | 'read-write' | 'leader';
  /** Who holds it now: one holder for a mutex. */
  readonly holders: readonly LockHolder[];
}

export interface LockHolder {
  /** The `instance` option of the process that holds it (`<hostname>:<pid>` by default). */
  readonly instance: string;
  /** The grant's token: only for a holder in this LockService, since a token lets its bearer release. */
  readonly token?: string;
  /** ms until the lease expires unless renewed (Redlock: until fewer than a quorum of nodes would hold it). */
  readonly ttlLeft: number;
  /** The grant's fencing token. */
  readonly fence: number;
}
