import { setTimeout as sleep } from 'node:timers/promises';
import { LockOptionsError } from '../../lib';
import { trackLockApps, uniqueKey } from '../support/lock-app';
import { describeEachStore, StoreUnderTest, storesUnderTest } from '../support/store-matrix';
import { becomesFree, busyUntil, refusedNow, twoLockServices } from './helpers/contenders';
import { rejectionOf } from './helpers/timing';

/**
 * minHold (ShedLock's lockAtLeastFor): a lock released sooner than minHold after its grant is left to
 * expire at grant + minHold instead of being deleted, so that late instances find it busy.
 */
// Redlock over 3 nodes stands for Redlock: the hold-over runs the same script on every node that granted.
describeEachStore(
  'minHold (%s store)',
  (_name, fixture) => {
    let store: StoreUnderTest;
    beforeAll(async () => {
      store = await fixture.setup();
    });
    afterAll(() => store?.teardown());
    const apps = trackLockApps();

    it('released early: release() is true, the key stays busy until grant + minHold, then is free', async () => {
      const [holderSide, otherSide] = await twoLockServices(store, apps);
      const key = uniqueKey('min-hold');
      // The library counts minHold from when it saw the grant: after this, and no later than grantedAt.
      const acquiredFrom = performance.now();
      const lock = await holderSide.acquire(key, { minHold: 800, ttl: 5_000 });
      const grantedAt = performance.now();
      expect(await lock.release()).toBe(true);

      await sleep(150);
      await busyUntil(acquiredFrom + 800, () => refusedNow(otherSide, key), 'tryAcquire after the early release');
      await busyUntil(acquiredFrom + 800, () => otherSide.isLocked(key), 'isLocked after the early release');

      // Free within moments of grant + minHold, long before the 5 s ttl.
      await sleep(Math.max(0, grantedAt + 800 - performance.now()));
      await becomesFree(otherSide, key, 2_000);
    });

    it('a waiter is woken when the held-over lease expires, not before and not a lease later', async () => {
      const [holderSide, waiterSide] = await twoLockServices(store, apps);
      const key = uniqueKey('min-hold-wake');
      const lock = await holderSide.acquire(key, { minHold: 700, ttl: 10_000 });
      const grantedAt = performance.now();
      await lock.release();

      const waiter = await waiterSide.acquire(key, { wait: 8_000 });
      const gotItAfter = performance.now() - grantedAt;
      // Not before minHold (the hold-over is real); long before the 10 s lease or the 8 s wait could explain it.
      expect(gotItAfter).toBeGreaterThanOrEqual(650);
      expect(gotItAfter).toBeLessThan(700 + 2_500);
      await waiter.release();
    });

    it('minHold longer than the ttl holds the key for minHold (the lease is extended to cover it)', async () => {
      const [holderSide, otherSide] = await twoLockServices(store, apps);
      const key = uniqueKey('min-hold-long');
      // ttl 600: the lease must still be held at release (a lost lease releases false), with room for a stall.
      const acquiredFrom = performance.now();
      const lock = await holderSide.acquire(key, { ttl: 600, minHold: 1_500 });
      const grantedAt = performance.now();
      expect(await lock.release()).toBe(true);

      // Well past the 600 ms ttl, still before minHold.
      await sleep(Math.max(0, grantedAt + 900 - performance.now()));
      await busyUntil(acquiredFrom + 1_500, () => refusedNow(otherSide, key), 'tryAcquire past the ttl');

      // Free within moments of grant + minHold: a hold-over carrying one more ttl (600 ms) would still be held.
      await sleep(Math.max(0, grantedAt + 1_500 - performance.now()));
      await becomesFree(otherSide, key, 400);
    });

    it('released after minHold has passed: deleted at once, the next caller gets it immediately', async () => {
      const [holderSide, otherSide] = await twoLockServices(store, apps);
      const key = uniqueKey('min-hold-passed');
      const lock = await holderSide.acquire(key, { minHold: 100, ttl: 5_000 });
      await sleep(250);
      expect(await lock.release()).toBe(true);
      const next = await otherSide.tryAcquire(key);
      expect(next).not.toBeNull();
      await next?.release();
    });

    it('the module default applies to every call, and a call can turn it off with 0', async () => {
      const [holderSide, otherSide] = await twoLockServices(store, apps, { minHold: 5_000 });
      const held = uniqueKey('min-hold-default');
      await (await holderSide.acquire(held)).release();
      expect(await otherSide.tryAcquire(held)).toBeNull();

      const free = uniqueKey('min-hold-off');
      await (await holderSide.acquire(free, { minHold: 0 })).release();
      const next = await otherSide.tryAcquire(free, { minHold: 0 });
      expect(next).not.toBeNull();
      await next?.release();
    });

    it('an invalid minHold is a LockOptionsError at the call and at bootstrap', async () => {
      const [locks] = await twoLockServices(store, apps);
      for (const minHold of [-1, Number.NaN, Infinity, '100']) {
        const error = await rejectionOf(locks.acquire(uniqueKey('bad-min-hold'), { minHold: minHold as number }));
        expect(error).toBeInstanceOf(LockOptionsError);
        expect((error as LockOptionsError).option).toBe('minHold');
      }
      expect(await rejectionOf(apps.start(store.options({ minHold: -5 })))).toBeInstanceOf(LockOptionsError);
    });
  },
  storesUnderTest(['memory', 'redis', 'redlock3']),
);
