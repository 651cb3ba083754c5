import { setTimeout as sleep } from 'node:timers/promises';
import { trackLockApps, uniqueKey } from '../support/lock-app';
import { StoreUnderTest, storeRows } from '../support/store-matrix';
import { twoLockServices } from './helpers/contenders';

describe.each(storeRows())('lease renewal (%s store)', (_name, fixture) => {
  let store: StoreUnderTest;
  beforeAll(async () => {
    store = await fixture.setup();
  });
  afterAll(() => store?.teardown());
  const apps = trackLockApps();

  it('a lock with a 300 ms ttl held for over 3 ttl stays held; after release the key is free at once', async () => {
    const [holder, contender] = await twoLockServices(store, apps);
    const key = uniqueKey('renewed');
    const lock = await holder.acquire(key, { ttl: 300 });

    for (let check = 0; check < 4; check++) {
      await sleep(300);
      expect(lock.signal.aborted).toBe(false);
      expect(await contender.isLocked(key)).toBe(true);
      expect(await contender.tryAcquire(key, { ttl: 300 })).toBeNull();
    }

    expect(await lock.release()).toBe(true);
    const next = await contender.tryAcquire(key, { ttl: 300 });
    expect(next).not.toBeNull();
    expect(next?.fence).toBeGreaterThan(lock.fence);
    expect(await next?.release()).toBe(true);
  });

  it('extend() renews the lease on demand while held', async () => {
    const [holder, contender] = await twoLockServices(store, apps);
    const key = uniqueKey('extended');
    const lock = await holder.acquire(key, { ttl: 300, autoExtend: false });
    await sleep(200);
    await lock.extend(600);
    await sleep(300);
    // 500 ms after the grant: the original 300 ms lease would be gone, the extended one is not.
    expect(await contender.isLocked(key)).toBe(true);
    expect(await contender.tryAcquire(key)).toBeNull();
    expect(await lock.release()).toBe(true);
  });
});
