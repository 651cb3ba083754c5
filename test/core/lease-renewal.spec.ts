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

  // ttl 600: each renewal has 400 ms to come back, so a stall of the loaded test machine is not read as a
  // lost lease (ttl 300 left 200 ms).
  it('a lock with a 600 ms ttl held for 3 ttl stays held; after release the key is free at once', async () => {
    const [holder, contender] = await twoLockServices(store, apps);
    const key = uniqueKey('renewed');
    const lock = await holder.acquire(key, { ttl: 600 });

    for (let check = 0; check < 4; check++) {
      await sleep(450);
      expect(lock.signal.aborted).toBe(false);
      expect(await contender.isLocked(key)).toBe(true);
      expect(await contender.tryAcquire(key)).toBeNull();
    }

    expect(await lock.release()).toBe(true);
    const next = await contender.tryAcquire(key);
    expect(next).not.toBeNull();
    expect(next?.fence).toBeGreaterThan(lock.fence);
    expect(await next?.release()).toBe(true);
  });

  it('extend() renews the lease on demand while held', async () => {
    const [holder, contender] = await twoLockServices(store, apps);
    const key = uniqueKey('extended');
    const lock = await holder.acquire(key, { ttl: 800, autoExtend: false });
    await sleep(300);
    await lock.extend(2_000);
    await sleep(700);
    // 1 s after the grant: the original 800 ms lease would be gone, the extended one (to ~2.3 s) is not.
    expect(await contender.isLocked(key)).toBe(true);
    expect(await contender.tryAcquire(key)).toBeNull();
    expect(await lock.release()).toBe(true);
  });
});
