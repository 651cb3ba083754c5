/**
 * The types of the module's configuration: LockModuleOptions and its connections, AcquireOptions and
 * LockedOptions of a call, and the resolved options the module's parts read.
 */
import type { Cluster, Redis, RedisOptions } from 'ioredis';

/**
 * A client or cluster of ioredis' API that is not this ioredis: iovalkey's `Redis` / `Cluster`, or a second
 * copy of ioredis. Recognised by shape; the module only ever duplicates it (docs/stores-and-deployment.md,
 * "Connections").
 */
export interface IoredisLikeClient {
  defineCommand(...args: never[]): unknown;
  duplicate(...args: never[]): unknown;
  pipeline(...args: never[]): unknown;
}

/**
 * A node-redis (`redis` package, v4 or v5) client (`createClient`) or cluster (`createCluster`), connected
 * or not. Recognised by shape: the module never loads node-redis, it only duplicates the client it is given.
 */
export interface NodeRedisLikeClient {
  readonly isOpen: boolean;
  connect(...args: never[]): Promise<unknown>;
  duplicate(...args: never[]): unknown;
  sendCommand(...args: never[]): Promise<unknown>;
}

/**
 * One Redis deployment: a URL or ioredis options (the module makes and owns an ioredis client), or a client
 * it borrows — ioredis, iovalkey or node-redis, standalone, Sentinel or Cluster.
 */
export type RedisConnection = string | RedisOptions | Redis | Cluster | IoredisLikeClient | NodeRedisLikeClient;

/** One independent Redis master of a Redlock set: the same forms, but not a Cluster. */
export type RedlockNode = string | RedisOptions | Redis | IoredisLikeClient | NodeRedisLikeClient;

/**
 * `minReplicas`: after each grant and renewal, `WAIT replicas timeout`; a grant fewer replicas acknowledged
 * is undone (LockUnavailableError), a renewal they did not acknowledge does not count.
 */
export interface MinReplicas {
  /** How many replicas must acknowledge each write of a lease (at least 1). */
  readonly replicas: number;
  /** How long to wait for their acknowledgement, in ms (at least 1: WAIT 0 would block forever). */
  readonly timeout: number;
}

/** Per-call options of acquire / tryAcquire / withLock. Unset fields fall back to the module's options. */
export interface AcquireOptions {
  /** Lease length in ms. */
  ttl?: number | undefined;
  /** How long to wait for a busy key, in ms; 0 makes one attempt. `Infinity` waits until `signal` aborts. */
  wait?: number | undefined;
  /** Renew the lease while it is held. */
  autoExtend?: boolean | undefined;
  /** Cap on the total hold time under auto-extension, in ms (ShedLock's lockAtMostFor). */
  maxHold?: number | undefined;
  /**
   * Shortest time the lock stays held after its grant, in ms (ShedLock's lockAtLeastFor): released sooner,
   * it is not deleted but left to expire at grant + minHold. 0 (the default) deletes at release.
   */
  minHold?: number | undefined;
  /** A context that already holds the keys gets them again at once. */
  reentrant?: boolean | undefined;
  /**
   * Makes the key a counting semaphore: up to `limit` holders at once (an integer from 1), each with its
   * own lock (token, lease, fence, signal, renewal, release). A key is either a mutex or a semaphore of one
   * limit: another limit, or a mutex or read-write use of a key held as a semaphore, is a LockOptionsError.
   * One key per call; not with `mode`.
   */
  limit?: number | undefined;
  /**
   * Makes the key a read-write lock: any number of 'read' holders together, a 'write' holder alone; a
   * waiting writer is not starved by new readers (they queue behind it). 'write' is the default, and is the
   * plain lock. A context holding the write lock may take the read lock (it borrows the write lock);
   * read → write in one context is a LockOptionsError (it would wait for itself). One key per call.
   */
  mode?: 'read' | 'write' | undefined;
  /**
   * Names this call's locks in metrics and events (`lock.name`), e.g. 'report' for `report:${id}`: a few
   * values, never the rendered key. A @Locked method's default is its key template.
   */
  label?: string | undefined;
  /** Cancels waiting: the call rejects with the signal's reason. */
  signal?: AbortSignal | undefined;
}

/** Options of @Locked: the acquire options plus what to do when the key stays busy. */
export type LockedOptions = AcquireOptions & {
  /** 'throw' (default) raises LockNotAcquiredError; 'skip' does not run the method and resolves undefined. */
  onBusy?: 'throw' | 'skip' | undefined;
};

/**
 * What a `LockModule.forRootAsync({ useClass | useExisting })` class implements: Nest's ConfigurableModuleBuilder
 * calls its `create()` (not `createLockOptions()`).
 */
export interface LockOptionsFactory {
  create(): LockModuleOptions | Promise<LockModuleOptions>;
}

export interface LockModuleOptions {
  /** One Redis deployment (standalone, Sentinel or Cluster). Exclusive with `nodes`. */
  redis?: RedisConnection | undefined;
  /** Redlock over N independent masters, quorum floor(N/2)+1. Exclusive with `redis`. */
  nodes?: readonly RedlockNode[] | undefined;
  /** Prepended to every Redis key. Default `lock:`. */
  keyPrefix?: string | undefined;
  /** Lease length in ms. Default 10000. */
  ttl?: number | undefined;
  /** How long acquire() and @Locked wait for a busy key, in ms. Default 10000. */
  wait?: number | undefined;
  /** Renew the lease while held. Default true. */
  autoExtend?: boolean | undefined;
  /** Cap on the total hold time under auto-extension, in ms. Default: no cap. */
  maxHold?: number | undefined;
  /** Default minHold of every call, in ms (see AcquireOptions.minHold). Default 0. */
  minHold?: number | undefined;
  /** Clock-drift allowance as a fraction of the ttl (drift = ttl * driftFactor + 2 ms). Default 0.01. */
  driftFactor?: number | undefined;
  /** Reentrant acquisition inside a context that holds the key. Default true. */
  reentrant?: boolean | undefined;
  /**
   * This process's name in lock ownership (`inspect`), logs and events: recorded with each lease.
   * Default `<hostname>:<pid>`; a pod or host name an operator recognises is best.
   */
  instance?: string | undefined;
  /**
   * Replication safety on Sentinel or Cluster (or a master with replicas): a grant or renewal counts only
   * once `replicas` replicas acknowledged it within `timeout` ms (docs/stores-and-deployment.md, "Replication"). Off by
   * default.
   */
  minReplicas?: MinReplicas | undefined;
  /**
   * How long one Redis command may take before the store counts as unreachable, in ms.
   * Default: ttl / 5, between 100 and 1000, and at most half the ttl.
   */
  commandTimeout?: number | undefined;
  /**
   * At application bootstrap, a Redis store is asked once whether it answers, and the answer logged in one
   * line: 'warn' (default) logs a store that does not answer as a warning and boots; 'fail' fails the
   * bootstrap with its LockUnavailableError; 'off' asks nothing.
   */
  startupCheck?: StartupCheck | undefined;
  /**
   * Lock errors thrown outside a @Locked route handler (a @Locked service method, `withLock` / `acquire` in a
   * handler) reach the client as a @Locked route's do, through a global interceptor of the module: Retry-After on
   * a busy HTTP answer, the transport's shape on RPC, WebSocket and GraphQL, one log line at the error's level.
   * Your own exception filters still see the lock errors themselves. Off: the interceptor does nothing; the
   * errors, HttpExceptions, still answer HTTP with their status and body. Default true.
   */
  errorMapping?: boolean | undefined;
}

/** What the startup check does with a Redis store that does not answer (LockModuleOptions.startupCheck). */
export type StartupCheck = 'warn' | 'fail' | 'off';

/** The options after defaults were merged and every value was validated. */
export interface ResolvedLockOptions {
  readonly redis?: RedisConnection;
  readonly nodes?: readonly RedlockNode[];
  readonly keyPrefix: string;
  readonly ttl: number;
  readonly wait: number;
  readonly autoExtend: boolean;
  readonly maxHold: number;
  readonly minHold: number;
  readonly driftFactor: number;
  readonly reentrant: boolean;
  readonly commandTimeout?: number;
  readonly instance: string;
  readonly minReplicas?: MinReplicas;
  readonly startupCheck: StartupCheck;
  readonly errorMapping: boolean;
}
