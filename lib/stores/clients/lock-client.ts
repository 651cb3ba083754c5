// The one seam between the Redis stores and a Redis client library: what the lock engine does with a connection.
import type { Logger } from '@nestjs/common';
import type { LockScript } from './lock-script';

/** A key or argument as the stores pass it; adapters send it as a string. */
export type RedisArgument = string | number;

/**
 * Which adapter speaks to a client. iovalkey is an ioredis fork with the same API and goes through the
 * ioredis adapter: recognising it by shape is all the module needs (it never loads either package for a
 * client it was handed).
 */
export type ClientFamily = 'ioredis' | 'node-redis';

/** How the module's lock connection is named, logged, and written to. */
export interface LockClientOptions {
  /** The node's label in logs ('redis', `nodes[i]`). */
  readonly label: string;
  readonly logger: Logger;
  /** True for one deployment's connection, false for a Redlock node's (see WriteCoalescer). */
  readonly writeFirstWhenIdle: boolean;
}

/** The reply of a script sent together with WAIT, and how many replicas acknowledged the write. */
export interface ReplicatedReply {
  readonly reply: unknown;
  readonly acks: number;
  /**
   * The script ran on a second send (its first was answered NOSCRIPT, or MOVED on a Cluster): commands sent
   * on the connection meanwhile, an undo of this very grant among them, may have run before it.
   */
  readonly resent: boolean;
}

/**
 * The one seam between the Redis stores and a Redis client library: the few things the lock engine does
 * with a connection, whatever library made it. Every LockClient owns its connection (made by the module,
 * or duplicated from a client the user lent it) and close() closes it.
 *
 * Errors reject with the library's own error (its message keeps Redis's error code: NOSCRIPT, CROSSSLOT,
 * WRONGTYPE…); the stores map them to lock errors.
 */
export interface LockClient {
  readonly family: ClientFamily;
  /** A Redis Cluster client (commands are routed by key) rather than one server, Sentinel-managed or not. */
  readonly isCluster: boolean;
  /**
   * The connection's last error (e.g. `connect ECONNREFUSED 127.0.0.1:6399`) until it is ready again: what a
   * command failing meanwhile cannot say itself (ioredis rejects it with "Reached the max retries per request
   * limit", or it times out), so the stores add it to their LockUnavailableError.
   */
  readonly connectionError: string | undefined;
  /**
   * Runs `script` by its SHA, loading it (EVAL) when the server does not know it (first use on a connection,
   * a restart, SCRIPT FLUSH, a failover to a replica that never saw it). With `timeoutMs`, rejects with
   * CommandTimeoutError when no answer came within it (the script may still run: callers undo).
   */
  runScript(
    script: LockScript,
    keys: readonly string[],
    args: readonly RedisArgument[],
    timeoutMs?: number,
  ): Promise<unknown>;
  /**
   * Runs `script` and then `WAIT replicas timeoutMs` on the same connection, written together so both
   * take one round trip (Lua cannot call WAIT), on the master that owns `keys[0]` in a Cluster. The acks
   * count only when they cover the script: after a NOSCRIPT, both are sent again.
   */
  runScriptAndWait(
    script: LockScript,
    keys: readonly string[],
    args: readonly RedisArgument[],
    replicas: number,
    timeoutMs: number,
  ): Promise<ReplicatedReply>;
  /** EXISTS of one key (on its master in a Cluster): 1 or 0. */
  exists(key: string): Promise<number>;
  /** Resolves when the server (a Cluster node) answers PING. */
  ping(): Promise<void>;
  /**
   * Where messages of subscribed channels go (set once, before subscribing). Only meaningful on a
   * connection made with `duplicate({ subscriber: true })`.
   */
  onMessage(handler: (channel: string, message: string) => void): void;
  /** Resolves once the subscription is active, so a message published from then on is delivered. */
  subscribe(channel: string): Promise<void>;
  /**
   * Called each time the connection is ready again after it was lost (not at its first connect). Messages
   * published meanwhile were not delivered: a subscriber learns of the gap here.
   */
  onReconnect(handler: () => void): void;
  unsubscribe(channel: string): Promise<void>;
  /**
   * A new connection to the same deployment with the same options (address, Sentinel, TLS, auth,
   * database…), owned by the caller. `subscriber` prepares it for pub/sub only.
   */
  duplicate(options?: { readonly subscriber?: boolean }): LockClient;
  /** Closes the connection: gracefully (QUIT) when it answers, at once otherwise. Idempotent. */
  close(): Promise<void>;
}
