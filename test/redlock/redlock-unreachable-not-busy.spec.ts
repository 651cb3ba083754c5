import Redis from 'ioredis';
import { LockUnavailableError } from '../../lib';
import { findFreePort } from '../support/free-port';
import { trackLockApps, uniqueKey } from '../support/lock-app';
import { startRedis, type RedisProcess } from '../support/redis-server';
import { rejectionOf } from '../core/helpers/timing';

/**
 * 3 nodes, 2 of them unreachable, and the one that answers holds the key for someone else: the store cannot
 * form a quorum either way, and must say it is unavailable, never "busy" (which would make tryAcquire
 * resolve null and `onBusy: 'skip'` skip silently while Redis is down).
 */
describe('Redlock with a quorum unreachable', () => {
  let live: RedisProcess;
  let client: Redis;
  const apps = trackLockApps();
  beforeAll(async () => {
    live = await startRedis();
    client = new Redis(live.url);
  });
  afterAll(async () => {
    client?.disconnect();
    await live?.stop();
  });

  it('is LockUnavailableError for tryAcquire, acquire and isLocked, even when the reachable node answers busy', async () => {
    const dead = await Promise.all([findFreePort(), findFreePort()]);
    const nodes = [live.url, ...dead.map((port) => `redis://127.0.0.1:${port}`)];
    const { locks } = await apps.start({ nodes, ttl: 2_000 });
    const key = uniqueKey('unreachable');
    await client.set(`lock:{${key}}`, 'someone-else', 'PX', 10_000);
    expect(await rejectionOf(locks.tryAcquire(key))).toBeInstanceOf(LockUnavailableError);
    expect(await rejectionOf(locks.acquire(key, { wait: 0 }))).toBeInstanceOf(LockUnavailableError);
    expect(await rejectionOf(locks.isLocked(key))).toBeInstanceOf(LockUnavailableError);
  });
});
