import { trackLockApps, uniqueKey } from '../support/lock-app';
import { describeEachStore, type StoreUnderTest, storesUnderTest } from '../support/store-matrix';
import { waiterAsleep } from '../support/waiters';
import { twoLockServices } from './helpers/contenders';

/** The holder's lease: a waiter that no announcement wakes sleeps until its end. */
const HOLDER_TTL_MS = 8_000;
/** Well below HOLDER_TTL_MS: woken by the announcement its resubscription stands for, not by the lease's end. */
const GRANTED_WITHIN_MS = 3_000;

/**
 * A release published while a waiter's subscriber connection is down reaches nobody, and takes the key's
 * "awaited" mark with it. A subscriber that is back counts that gap as an announcement: the waiter looks again
 * once it listens again, instead of sleeping until the holder's lease would have ended.
 */
describeEachStore(
  'releases while the subscriber reconnects (%s store)',
  (_name, fixture) => {
    let store: StoreUnderTest;
    beforeAll(async () => {
      store = await fixture.setup();
    });
    afterAll(() => store?.teardown());
    const apps = trackLockApps();

    it('a waiter of another service is granted soon after a release made while its subscriber connection was killed', async () => {
      const [holderSide, waiterSide] = await twoLockServices(store, apps);
      const key = uniqueKey('resubscribed');
      const holder = await holderSide.acquire(key, { ttl: HOLDER_TTL_MS, autoExtend: false });
      const waiting = waiterSide.acquire(key, { ttl: HOLDER_TTL_MS, wait: 20_000 });
      await waiterAsleep(waiterSide, key);
      // Only the waiter's service listens (the holder never waited): its subscriber connection on every server.
      const killed = await Promise.all(
        store.servers.map((server) => server.command('CLIENT', 'KILL', 'TYPE', 'pubsub')),
      );
      expect(killed.reduce((total: number, count) => total + Number(count), 0)).toBeGreaterThanOrEqual(1);
      // At once, while the driver reconnects: the release's PUBLISH reaches no subscriber.
      const releasedAt = performance.now();
      expect(await holder.release()).toBe(true);
      const lock = await waiting;
      const after = performance.now() - releasedAt;
      expect(after, `granted ${Math.round(after)} ms after the release`).toBeLessThan(GRANTED_WITHIN_MS);
      await lock.release();
    });
  },
  storesUnderTest(['redis', 'redlock3']),
);
