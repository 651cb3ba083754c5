import type { Logger } from '@nestjs/common';
import Redis, { type RedisOptions } from 'ioredis';
import { isIoredisClient, isNodeRedisClient } from './client-shape';
import { DISCONNECT_TIMEOUT_MS, IoredisLockClient, MODULE_CONNECTION_OVERRIDES, duplicateIoredis, lentKeyPrefix } from './ioredis/ioredis.lock-client';
import type { LockClient } from './lock-client';
import { NodeRedisLockClient, duplicateNodeRedis } from './node-redis/node-redis.lock-client';

/** How the module's lock connection is named, logged, and written to. */
export interface LockClientOptions {
  /** The node's label in logs ('redis', `nodes[i]`). */
  readonly label: string;
  readonly logger: Logger;
  /** True for one deployment's connection, false for a Redlock node's (see IoredisLockClient's coalesceWrites). */
  readonly writeFirstWhenIdle: boolean;
}

/**
 * The module's lock connection to one deployment (or one Redlock node), always its own:
 * - from a URL or ioredis options, a new ioredis client;
 * - from a client the user lends (ioredis, iovalkey, node-redis; client or cluster), a duplicate of it —
 *   same address, Sentinel, TLS, auth and database — so that the lock engine can coalesce its writes on
 *   a socket nobody else writes to, and renewals never queue behind the application's slow commands. The
 *   lent client itself is only ever duplicated: never used for a command, never closed.
 * The caller closes the returned client (and any duplicate made of it).
 */
export function createLockClient(connection: string | RedisOptions | object, options: LockClientOptions): LockClient {
  const { label, logger, writeFirstWhenIdle } = options;
  if (isIoredisClient(connection)) {
    const prefix = lentKeyPrefix(connection);
    if (prefix !== undefined) {
      logger.warn(
        `${label}: the lent client's keyPrefix '${prefix}' is not applied to lock keys (LockModule's keyPrefix ` +
          'names them, the same in every process); to keep it, put it in LockModule\'s keyPrefix',
      );
    }
    return new IoredisLockClient(duplicateIoredis(connection, false), label, logger, writeFirstWhenIdle);
  }
  if (isNodeRedisClient(connection)) return new NodeRedisLockClient(duplicateNodeRedis(connection), label, logger);
  return new IoredisLockClient(createIoredis(connection as string | RedisOptions), label, logger, writeFirstWhenIdle);
}

function createIoredis(connection: string | RedisOptions): Redis {
  // Writes are coalesced per tick by the adapter (no auto-pipelining); a small retry budget keeps a dead
  // server from holding a caller far beyond the store's own command timeout. Connected on the first
  // command, not when the module is built: an application whose bootstrap fails afterwards (a bad @Locked
  // template, another module's onModuleInit) runs no shutdown hook, and would leave the connection open.
  // A keyPrefix or a disabled offline queue in the options is overridden (see MODULE_CONNECTION_OVERRIDES).
  const ours: RedisOptions = { maxRetriesPerRequest: 2, lazyConnect: true, disconnectTimeout: DISCONNECT_TIMEOUT_MS };
  return typeof connection === 'string'
    ? new Redis(connection, { ...ours, ...MODULE_CONNECTION_OVERRIDES })
    : new Redis({ ...ours, ...connection, ...MODULE_CONNECTION_OVERRIDES });
}
