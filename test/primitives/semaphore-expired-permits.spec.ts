import { connected, trackLockApps, uniqueKey } from '../support/lock-app';
import { describeEachStore, type StoreUnderTest, storesUnderTest } from '../support/store-matrix';
import { waiterAsleep } from '../support/waiters';

/** The holders' leases: they never renew nor release (crashed), so their permits come free by expiry alone. */
const FIRST_LEASE_MS = 1_000;
const SECOND_LEASE_MS = 1_600;
/** The waiters' ttl: a waiter that nothing wakes before sleeps this long (its wait is longer). */
const WAITER_TTL_MS = 8_000;
/**
 * Both waiters are in well before the waiters' ttl: the second permit comes free at 1.6 s, and a waiter
 * asleep until its ttl would get in at 8 s. Generous for a loaded machine.
 */
const IN_BY_MS = 5_000;

/**
 * A permit freed by its holder's expiry is announced to nobody: a waiter wakes for it only by its own timer
 * at the lease end it read. A waiter queued behind another of its process without an attempt has read none,
 * so whoever gets in ahead of it hands it the lease end it watched (and one that leaves without a permit
 * passes it the turn).
 */
describeEachStore(
  'semaphore permits freed by expiry (%s store)',
  (_name, fixture) => {
    let store: StoreUnderTest;
    beforeAll(async () => {
      store = await fixture.setup();
    });
    afterAll(() => store?.teardown());
    const apps = trackLockApps();

    it('limit 2, two holders gone silent: two waiters of one process both get in as the permits expire, not at their ttl', async () => {
      const locks = await connected((await apps.start(store.options())).locks);
      const key = uniqueKey('expired-permits');
      const startedAt = performance.now();
      // Held and never let go nor renewed: the crashed holders (handles kept so nothing releases them).
      const holders = [
        await locks.acquire(key, { limit: 2, ttl: FIRST_LEASE_MS, autoExtend: false }),
        await locks.acquire(key, { limit: 2, ttl: SECOND_LEASE_MS, autoExtend: false }),
      ];
      const waiterOptions = { limit: 2, ttl: WAITER_TTL_MS, wait: 20_000 };
      const grantedAt: number[] = [];
      const first = locks.acquire(key, waiterOptions).then((lock) => (grantedAt.push(performance.now()), lock));
      await waiterAsleep(locks, key);
      // Queued behind the first sleeper, without an attempt of its own.
      const second = locks.acquire(key, waiterOptions).then((lock) => (grantedAt.push(performance.now()), lock));
      const granted = await Promise.all([first, second]);
      const elapsed = grantedAt.map((at) => Math.round(at - startedAt));
      expect(
        elapsed.every((ms) => ms < IN_BY_MS),
        `granted after ${elapsed.join(' and ')} ms`,
      ).toBe(true);
      // Not in before the permits were free: each got a permit a holder's expiry left.
      expect(Math.min(...elapsed)).toBeGreaterThanOrEqual(FIRST_LEASE_MS - 50);
      expect(Math.max(...elapsed)).toBeGreaterThanOrEqual(SECOND_LEASE_MS - 50);
      await Promise.all(granted.map((lock) => lock.release()));
      // The holders' permits had expired: nothing released or renewed them meanwhile.
      expect(await Promise.all(holders.map((holder) => holder.release()))).toEqual([false, false]);
    });
  },
  storesUnderTest(['memory', 'redis', 'redlock3']),
);
