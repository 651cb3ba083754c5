// The ioredis connections the module makes or duplicates, and the part of ioredis' public API the adapter uses of them.
import Redis, { type Command, type RedisOptions } from 'ioredis';
import type { RedisArgument } from '../lock-client';

/** What the adapter uses of an ioredis pipeline (a script, then WAIT, in one round trip). */
export interface IoredisPipeline {
  evalsha(sha: string, numKeys: number, ...keysAndArgs: RedisArgument[]): IoredisPipeline;
  eval(lua: string, numKeys: number, ...keysAndArgs: RedisArgument[]): IoredisPipeline;
  call(command: string, ...args: RedisArgument[]): IoredisPipeline;
  exec(): Promise<[Error | null, unknown][] | null>;
}

/**
 * What the adapter uses of an ioredis 5/6 (or iovalkey) `Redis` or `Cluster`: only what both share, so a
 * second copy of the library in node_modules, or the fork, fits too. Its internals (the socket, the queue
 * of sent commands, the ready check) are read only through IoredisInternals.
 */
export interface IoredisConnection {
  readonly isCluster?: boolean;
  readonly status: string;
  defineCommand(name: string, definition: { lua: string }): void;
  /** Queues a command built by the caller; resolves with its reply (ioredis types it loosely). */
  sendCommand(command: Command): unknown;
  pipeline(): IoredisPipeline;
  exists(key: string): Promise<number>;
  ping(): Promise<unknown>;
  subscribe(channel: string): Promise<unknown>;
  unsubscribe(channel: string): Promise<unknown>;
  quit(): Promise<unknown>;
  disconnect(): void;
  on(event: string, listener: (...args: never[]) => void): unknown;
  /** A Cluster's: fetches the slot map anew (CLUSTER SLOTS), then calls back (with an error if no node answered). */
  refreshSlotsCache?(callback: (error?: Error | null) => void): void;
}

/** A node connection of an ioredis Cluster, as its '+node' event gives it. */
export interface ClusterNodeConnection {
  readonly options: { readonly host?: string; readonly port?: number };
  on(event: 'ready', listener: () => void): unknown;
}

/** The options this adapter overrides on every connection it duplicates (see duplicateIoredis). */
interface StandaloneDuplicate {
  duplicate(override: Record<string, unknown>): IoredisConnection;
}
interface ClusterDuplicate {
  duplicate(startupNodes: never[], override: Record<string, unknown>): IoredisConnection;
}

/**
 * How long ioredis lets a dropped connection's socket close by itself before destroying it (its default is
 * 2 s). ioredis arms that timer even for a socket that is already closed (a server that refused the
 * connection), and nothing clears it then: an application closing while Redis was unreachable would stay
 * alive 2 s after app.close(). The module drops a connection only once QUIT has failed or timed out (or
 * before it ever connected): whatever could still be flushed has had its second by then.
 */
export const DISCONNECT_TIMEOUT_MS = 100;

/**
 * What every connection of the module overrides, made from options or duplicated from a lent client:
 * - no key prefix: LockModule's `keyPrefix` names the lock keys, the same in every process whatever client it
 *   uses; a client prefix would silently put this process's locks under other names than its peers' (two
 *   holders of one lock) and hide them from inspect() and forceRelease() elsewhere;
 * - an offline queue: the connection opens on its first command (lazyConnect), which without a queue would be
 *   refused ("Stream isn't writeable"); the stores bound every command with their own timeout anyway.
 */
export const MODULE_CONNECTION_OVERRIDES = { keyPrefix: '', enableOfflineQueue: true } as const;

/**
 * A new ioredis client from a URL or options. Writes are coalesced per tick by the adapter (no auto-pipelining);
 * a small retry budget keeps a dead server from holding a caller far beyond the store's own command timeout.
 * Connected on the first command, not when the module is built: an application whose bootstrap fails afterwards
 * (a bad @Locked template, another module's onModuleInit) runs no shutdown hook, and would leave the connection
 * open. A keyPrefix or a disabled offline queue in the options is overridden (see MODULE_CONNECTION_OVERRIDES).
 */
export function createIoredis(connection: string | RedisOptions): Redis {
  const ours: RedisOptions = { maxRetriesPerRequest: 2, lazyConnect: true, disconnectTimeout: DISCONNECT_TIMEOUT_MS };
  return typeof connection === 'string'
    ? new Redis(connection, { ...ours, ...MODULE_CONNECTION_OVERRIDES })
    : new Redis({ ...ours, ...connection, ...MODULE_CONNECTION_OVERRIDES });
}

/**
 * A new connection with `connection`'s options. Overridden, because the copy is the module's and its
 * commands are bounded by the store's own timeouts: connected on first use (a module whose bootstrap
 * fails never opens it), no auto-pipelining (writes are coalesced per tick instead), and a small retry
 * budget so a dead server does not pile commands up, plus MODULE_CONNECTION_OVERRIDES. A subscriber skips the
 * ready check: ioredis sends INFO for it, which a connection already in subscriber mode refuses, failing the
 * pending subscriptions. Nor does ioredis subscribe it again after a reconnect: the module does (ReleaseSubscriber),
 * holding every reply, while the SUBSCRIBE ioredis sends by itself is a promise nobody holds, which a close before
 * its answer rejects unhandled. On a Cluster only the Cluster's own options are overridden (its per-node options,
 * TLS and auth among them, would be replaced whole); its commands are prefixed by the Cluster's keyPrefix only.
 */
export function duplicateIoredis(
  connection: IoredisConnection,
  { subscriber = false }: { readonly subscriber?: boolean } = {},
): IoredisConnection {
  if (connection.isCluster === true) {
    return (connection as unknown as ClusterDuplicate).duplicate([], {
      lazyConnect: true,
      enableAutoPipelining: false,
      ...MODULE_CONNECTION_OVERRIDES,
    });
  }
  return (connection as unknown as StandaloneDuplicate).duplicate({
    lazyConnect: true,
    enableAutoPipelining: false,
    maxRetriesPerRequest: 2,
    disconnectTimeout: DISCONNECT_TIMEOUT_MS,
    ...MODULE_CONNECTION_OVERRIDES,
    ...(subscriber ? { enableReadyCheck: false, autoResubscribe: false } : {}),
  });
}

/** The key prefix a lent ioredis client (or Cluster) applies to its own commands, if any. */
export function lentKeyPrefix(connection: object): string | undefined {
  const prefix = (connection as { options?: { keyPrefix?: unknown } }).options?.keyPrefix;
  return typeof prefix === 'string' && prefix !== '' ? prefix : undefined;
}
