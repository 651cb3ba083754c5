import { setTimeout as sleep } from 'node:timers/promises';
import { LockNotAcquiredError } from '../../lib';
import { trackLockApps, uniqueKey } from '../support/lock-app';
import { StoreUnderTest, storeRows } from '../support/store-matrix';
import { twoLockServices } from './helpers/contenders';
import { rejectionOf } from './helpers/timing';

describe.each(storeRows())('several keys, all or none (%s store)', (_name, fixture) => {
  let store: StoreUnderTest;
  beforeAll(async () => {
    store = await fixture.setup();
  });
  afterAll(() => store?.teardown());
  const apps = trackLockApps();

  it('one busy key: nothing is held, the free key stays free', async () => {
    const [locks, other] = await twoLockServices(store, apps);
    const free = uniqueKey('free');
    const busy = uniqueKey('busy');
    const blocker = await other.acquire(busy);

    expect(await locks.tryAcquire([free, busy])).toBeNull();
    expect(await locks.isLocked(free)).toBe(false);

    const error = await rejectionOf(locks.acquire([free, busy], { wait: 0 }));
    expect(error).toBeInstanceOf(LockNotAcquiredError);
    expect((error as LockNotAcquiredError).keys).toContain(busy);
    expect(await locks.isLocked(free)).toBe(false);

    // The free key can be taken on its own right away: the failed attempts left nothing on it.
    const single = await other.tryAcquire(free);
    expect(single).not.toBeNull();
    await single?.release();
    await blocker.release();
  });

  it('all keys free: every key held, one fence per key, fence is that of keys[0]', async () => {
    const [locks, other] = await twoLockServices(store, apps);
    const keys = [uniqueKey('a'), uniqueKey('b'), uniqueKey('c')];
    const lock = await locks.acquire(keys);

    expect(lock.keys).toEqual(keys);
    expect(Object.keys(lock.fences).sort()).toEqual([...keys].sort());
    for (const key of keys) {
      expect(Number.isSafeInteger(lock.fences[key])).toBe(true);
      expect(lock.fences[key]).toBeGreaterThan(0);
      expect(await other.isLocked(key)).toBe(true);
      expect(await other.tryAcquire(key)).toBeNull();
    }
    expect(lock.fence).toBe(lock.fences[keys[0]]);

    expect(await lock.release()).toBe(true);
    for (const key of keys) expect(await other.isLocked(key)).toBe(false);

    // Fences are per key: each key's next grant is above its own last one.
    const again = await other.acquire([keys[2], keys[0]]);
    expect(again.fence).toBe(again.fences[keys[2]]);
    expect(again.fences[keys[2]]).toBeGreaterThan(lock.fences[keys[2]]);
    expect(again.fences[keys[0]]).toBeGreaterThan(lock.fences[keys[0]]);
    await again.release();
  });

  it('a waiter for several keys gets all of them once the busy one is released', async () => {
    const [locks, other] = await twoLockServices(store, apps);
    const keys = [uniqueKey('x'), uniqueKey('y')];
    const blocker = await other.acquire(keys[1], { ttl: 10_000 });
    const waiting = locks.acquire(keys, { wait: 5_000 });
    await sleep(100);
    expect(await other.isLocked(keys[0])).toBe(false);
    await blocker.release();

    const lock = await waiting;
    for (const key of keys) expect(await other.isLocked(key)).toBe(true);
    await lock.release();
  });
});
