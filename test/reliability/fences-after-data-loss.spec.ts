import Redis from 'ioredis';
import { FencedWriteRejectedError, FencedWriter, type Lock, LockUnavailableError, type LockService } from '../../lib';
import { eventually } from '../support/eventually';
import { createLockApp, trackLockApps, uniqueKey } from '../support/lock-app';
import { type RedisProcess, startRedis } from '../support/redis-server';
import { TcpProxy } from './support/tcp-proxy';

/**
 * Fences rise across a loss of the lock's data: a Redis restarted without persistence (the test servers keep
 * nothing on disk) forgets the fence counters, and a grant's fence is still above every earlier one, because it
 * is at least the server's clock in µs. The resource lives on a second Redis that keeps its data.
 */
describe('Fences across a Redis restart without persistence', () => {
  let lockServer: RedisProcess;
  let dataServer: RedisProcess;
  let data: Redis;
  beforeAll(async () => {
    [lockServer, dataServer] = [await startRedis(), await startRedis()];
    data = new Redis(dataServer.url);
  });
  afterAll(async () => {
    data?.disconnect();
    await Promise.all([lockServer?.stop(), dataServer?.stop()]);
  });
  const apps = trackLockApps();

  it("after the restart the next grant's fence is above every earlier one, and the stale holder's late write is refused", async () => {
    const { locks } = await apps.start({ redis: lockServer.url, ttl: 5_000 });
    const writer = new FencedWriter(data);
    const key = uniqueKey('account');
    const resource = uniqueKey('balance');
    const before: number[] = [];
    for (let i = 0; i < 4; i++) {
      const lock = await locks.acquire(key, { wait: 0 });
      before.push(lock.fence);
      await lock.release();
    }
    // The holder (the fifth grant) writes, then stalls before its next write.
    const stale = await locks.acquire(key, { wait: 0, autoExtend: false });
    before.push(stale.fence);
    await writer.set(resource, 'written by the stale holder', stale);

    await lockServer.restart();

    // New holders: grants until one's write is accepted (before, fences 1-4 were refused and 5 was accepted).
    const after: number[] = [];
    let accepted: Lock | undefined;
    for (let i = 0; i < 5 && !accepted; i++) {
      const lock = await acquireOnceReachable(locks, key);
      after.push(lock.fence);
      if (await writer.trySet(resource, `written by grant ${i + 1} after the restart`, lock)) accepted = lock;
      else await lock.release();
    }
    expect({ before, after }).toEqual({ before, after: after.filter((fence) => fence > Math.max(...before)) });
    expect(after.every((fence, i) => i === 0 || fence > after[i - 1])).toBe(true);
    expect(accepted).toBeDefined();

    // The stale holder's delayed write is refused: the new holder's value stays.
    await expect(writer.set(resource, 'late write of the stale holder', stale)).rejects.toBeInstanceOf(
      FencedWriteRejectedError,
    );
    expect(await data.get(resource)).toBe(`written by grant ${after.length} after the restart`);
    await accepted?.release();
  });

  it('a grant asked before the restart and run after it (resent on reconnect) is above the grants made meanwhile', async () => {
    // The floor is read when the script runs: one read when the call was made would be older than the grant
    // made meanwhile by another process, and the restart took the counter that ordered them.
    const proxy = await TcpProxy.start(lockServer.port);
    try {
      const late = await apps.start({ redis: proxy.url, ttl: 10_000, autoExtend: false });
      const direct = await apps.start({ redis: lockServer.url, ttl: 10_000, autoExtend: false });
      await Promise.all([late.locks.isLocked(uniqueKey('ready')), direct.locks.isLocked(uniqueKey('ready'))]);
      const key = uniqueKey('resent');
      proxy.dropRequests = true;
      const asked = late.locks.tryAcquire(key);
      await new Promise((resolve) => setTimeout(resolve, 50));
      const meanwhile = await direct.locks.acquire(key, { wait: 0 });
      await lockServer.restart();
      proxy.dropRequests = false;
      // The path comes back: the client reconnects and resends its unanswered script.
      proxy.resetAll();
      const granted = await asked;
      expect(granted).not.toBeNull();
      expect(granted!.fence).toBeGreaterThan(meanwhile.fence);
    } finally {
      await proxy.stop();
    }
  });
});

/**
 * The in-process store keeps its counter in memory: a process started again (here, a second module with a
 * store of its own) gives fences above the first one's, so a resource fenced by the first run accepts the next.
 */
describe('Fences across a restart of the in-process store', () => {
  it("a new store's first fence is above the last fence of the one before", async () => {
    const first = await createLockApp({});
    const key = uniqueKey('job');
    let last = 0;
    try {
      for (let i = 0; i < 50; i++) {
        const lock = await first.locks.acquire(key);
        expect(lock.fence).toBeGreaterThan(last);
        last = lock.fence;
        await lock.release();
      }
    } finally {
      await first.close();
    }
    const second = await createLockApp({});
    try {
      const lock = await second.locks.acquire(key);
      expect(lock.fence).toBeGreaterThan(last);
      expect(Number.isSafeInteger(lock.fence)).toBe(true);
      await lock.release();
    } finally {
      await second.close();
    }
  });
});

/** acquire until the restarted server answers (unavailable meanwhile). */
async function acquireOnceReachable(locks: LockService, key: string): Promise<Lock> {
  let lock: Lock | undefined;
  await eventually(
    async () => {
      try {
        lock = await locks.acquire(key, { wait: 0 });
        return true;
      } catch (error) {
        if (error instanceof LockUnavailableError) return false;
        throw error;
      }
    },
    10_000,
    'a grant from the restarted Redis',
  );
  return lock as Lock;
}
