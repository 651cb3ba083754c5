// Makes the module's own lock connection to one deployment (or Redlock node), whatever client it was given.
import type { RedisOptions } from 'ioredis';
import { isIoredisClient, isNodeRedisClient } from '../../options/client-shape';
import { createIoredis, duplicateIoredis, lentKeyPrefix, type IoredisConnection } from './ioredis/ioredis-connection';
import { IoredisLockClient } from './ioredis/ioredis.lock-client';
import type { LockClient, LockClientOptions } from './lock-client';
import { NodeRedisLockClient, duplicateNodeRedis, type NodeRedisConnection } from './node-redis/node-redis.lock-client';

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
  // The shape checks say which family; the adapters' own types describe what each uses of it.
  if (isIoredisClient(connection)) {
    const lent = connection as unknown as IoredisConnection;
    const prefix = lentKeyPrefix(lent);
    if (prefix !== undefined) {
      options.logger.warn(
        `${options.label}: the lent client's keyPrefix '${prefix}' is ` +
          `not applied to lock keys (LockModule's keyPrefix ` +
          "names them, the same in every process); to keep it, put it in LockModule's keyPrefix",
      );
    }
    return new IoredisLockClient(duplicateIoredis(lent), options);
  }
  if (isNodeRedisClient(connection))
    return new NodeRedisLockClient(duplicateNodeRedis(connection as unknown as NodeRedisConnection), options);
  return new IoredisLockClient(createIoredis(connection as string | RedisOptions), options);
}
