/** A held lock. Obtained from LockService.acquire / tryAcquire / withLock, or LockService.current(). */
export interface Lock extends AsyncDisposable {
  /** The keys as given, without the prefix. */
  readonly keys: readonly string[];
  /** Random token of this grant (128 bits, hex). */
  readonly token: string;
  /** Fencing token of keys[0]: strictly greater than every earlier grant's for that key. */
  readonly fence: number;
  /** Fencing token per key. */
  readonly fences: Readonly<Record<string, number>>;
  /** Aborted, with a LockLostError as reason, once the lock is known to be lost. */
  readonly signal: AbortSignal;
  /** Renews the lease now (ttl defaults to the lock's). Rejects with LockLostError when no longer held. */
  extend(ttl?: number): Promise<void>;
  /** true: released now; false: it had already expired or been lost. Idempotent. */
  release(): Promise<boolean>;
}

/** What a key function of @Locked receives. */
export interface LockKeySource {
  /** The method's arguments. */
  readonly args: readonly unknown[];
  /** Route handlers only: the request's parts, or the RPC / WebSocket payload as `data`. */
  readonly params?: Record<string, unknown>;
  readonly query?: Record<string, unknown>;
  readonly body?: unknown;
  readonly headers?: Record<string, unknown>;
  readonly user?: unknown;
  readonly data?: unknown;
  /** Route handlers only: Nest's ExecutionContext. */
  readonly context?: unknown;
}
