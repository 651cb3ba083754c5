import { LockLostError, type AcquireOptions } from '../../lib';
import { LockKeyNamer } from '../../lib/keys';
import { sendCommand } from '../support/resp-client';
import { trackLockApps, uniqueKey } from '../support/lock-app';
import { startRedis, type RedisProcess } from '../support/redis-server';
import { abortedAt } from './support/timing';

/**
 * A holder never believes in a lease that Redis has already let go: by the time another service can take
 * the key, the first holder's signal has aborted. (Regression: extend() with a shorter ttl shortened the
 * lease in Redis but kept the longer local validity, so for up to one ttl two holders each believed they
 * held the lock.)
 */
describe("the holder's belief never outlives the lease in Redis", () => {
  const apps = trackLockApps();
  let server: RedisProcess;
  beforeAll(async () => {
    server = await startRedis();
  });
  afterAll(() => server?.stop());

  it.each<[string, AcquireOptions]>([
    ['extend() with a shorter ttl, auto-extension off', { autoExtend: false }],
    ['maxHold reached under auto-extension', { maxHold: 400 }],
  ])('%s: the signal aborts before another service is granted the key', async (_case, options) => {
    const first = await apps.start({ redis: server.url });
    const second = await apps.start({ redis: server.url });
    const key = uniqueKey('belief');
    const holder = await first.locks.acquire(key, { ttl: 10_000, ...options });
    if (options.autoExtend === false) await holder.extend(300);
    const lostAt = abortedAt(holder.signal);

    const successor = await second.locks.acquire(key, { wait: 5_000 });
    const grantedAt = performance.now();
    // The abort has already happened (its timestamp is earlier) when the successor holds the key.
    expect(holder.signal.aborted).toBe(true);
    expect(await lostAt).toBeLessThanOrEqual(grantedAt);
    expect(holder.signal.reason).toBeInstanceOf(LockLostError);
    expect(successor.fence).toBeGreaterThan(holder.fence);
    expect(await holder.release()).toBe(false);
    // Asked on the stale holder's own connection, so after its deletion ran (a lost lock's release() answers
    // without waiting for it): that deletion left the successor's lease alone.
    expect(await first.locks.isLocked(key)).toBe(true);
    expect(await successor.release()).toBe(true);
  });

  it("extend() after the lease's validity ended is refused as lost, even while Redis still holds the key", async () => {
    const { locks } = await apps.start({ redis: server.url });
    const key = uniqueKey('belief');
    const holder = await locks.acquire(key, { ttl: 300, autoExtend: false });
    // The key outlives the holder's validity in Redis (as a lease can on a node whose clock runs slow): only the
    // holder's own deadline says the lease is over.
    await sendCommand(server.port, ['PEXPIRE', new LockKeyNamer('lock:').names(key).lockKey, '60000']);
    // The event loop is blocked past the validity: no timer has run, nobody read the signal.
    const blockedUntil = performance.now() + 400;
    while (performance.now() < blockedUntil);
    await expect(holder.extend(1_000)).rejects.toBeInstanceOf(LockLostError);
    expect(holder.signal.aborted).toBe(true);
    expect(await holder.release()).toBe(false);
  });
});
