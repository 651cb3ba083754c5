import { setTimeout as sleep } from 'node:timers/promises';
import type { LockService } from '../../lib';
import { trackLockApps, uniqueKey } from '../support/lock-app';
import { StoreUnderTest, storeRows } from '../support/store-matrix';
import { twoLockServices } from './helpers/contenders';
import { sharedCounter } from './helpers/shared-counter';

describe.each(storeRows())('mutual exclusion (%s store)', (_name, fixture) => {
  let store: StoreUnderTest;
  beforeAll(async () => {
    store = await fixture.setup();
  });
  afterAll(() => store?.teardown());
  const apps = trackLockApps();

  it('40 concurrent withLock calls over two LockService instances: no overlap, exact counter, rising fences', async () => {
    const [first, second] = await twoLockServices(store, apps);
    const key = uniqueKey('counter');
    const counter = await sharedCounter(store, key);
    let inFlight = 0;
    let maxInFlight = 0;
    const grantedFences: number[] = [];
    const grantsPerService = new Map<LockService, number>();

    const increment = (locks: LockService): Promise<void> =>
      locks.withLock(
        key,
        async (lock) => {
          inFlight++;
          maxInFlight = Math.max(maxInFlight, inFlight);
          grantedFences.push(lock.fence);
          grantsPerService.set(locks, (grantsPerService.get(locks) ?? 0) + 1);
          // Read, yield, write: any overlap loses an increment.
          const value = await counter.read();
          await sleep(3);
          await counter.write(value + 1);
          inFlight--;
        },
        { wait: 30_000 },
      );

    try {
      await Promise.all(Array.from({ length: 40 }, (_, i) => increment(i % 2 === 0 ? first : second)));
      expect(maxInFlight).toBe(1);
      expect(await counter.read()).toBe(40);
      expect(grantedFences).toHaveLength(40);
      const notRising = grantedFences.filter((fence, i) => i > 0 && fence <= grantedFences[i - 1]);
      expect(notRising).toEqual([]);
      // Both callers' groups really took part.
      expect([...grantsPerService.values()].reduce((sum, grants) => sum + grants, 0)).toBe(40);
      if (store.sharedAcrossModules) expect(grantsPerService.get(first)).toBe(20);
      expect(await first.isLocked(key)).toBe(false);
    } finally {
      await counter.close();
    }
  });
});
