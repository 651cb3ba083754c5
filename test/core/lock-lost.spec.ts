import { Logger } from '@nestjs/common';
import { LockLostError } from '../../lib';
import { trackLockApps, uniqueKey } from '../support/lock-app';
import { StoreUnderTest, storeRows, storesUnderTest } from '../support/store-matrix';
import { deleteLeaseKeys } from './helpers/lease-keys';
import { abortedAt, within } from './helpers/timing';

/** Slack over one ttl for timers and a loaded machine. */
const MARGIN_MS = 500;
const TTL_MS = 1000;

// Only a Redis store can lose a lease behind the holder's back.
describe.each(storeRows(storesUnderTest().filter((store) => store.usesRedis)))(
  'lock lost (%s store)',
  (_name, fixture) => {
    let store: StoreUnderTest;
    beforeAll(async () => {
      store = await fixture.setup();
    });
    afterAll(() => store?.teardown());
    const apps = trackLockApps();

    it('deleting the held key aborts lock.signal with a LockLostError within one ttl', async () => {
      const { locks } = await apps.start(store.options());
      const key = uniqueKey('deleted');
      const lock = await locks.acquire(key, { ttl: TTL_MS });
      const aborted = abortedAt(lock.signal);

      const deletedAt = performance.now();
      expect(await deleteLeaseKeys(store.servers, key)).toBeGreaterThan(0);
      const at = await within(aborted, TTL_MS + 2000, 'lock.signal abort');

      expect(at - deletedAt).toBeLessThanOrEqual(TTL_MS + MARGIN_MS);
      expect(lock.signal.reason).toBeInstanceOf(LockLostError);
      expect(await lock.release()).toBe(false);
    });

    it("a loss is logged once as a warning (a @Locked handler's own result still reaches its caller); a shutdown is not a loss", async () => {
      const warnings = vi.spyOn(Logger.prototype, 'warn');
      try {
        const app = await apps.start(store.options());
        const key = uniqueKey('lost-logged');
        const lock = await app.locks.acquire(key, { ttl: TTL_MS, label: 'nightly' });
        await deleteLeaseKeys(store.servers, key);
        await within(abortedAt(lock.signal), TTL_MS + 2000, 'lock.signal abort');
        const lost = warnings.mock.calls
          .map(([message]) => String(message))
          .filter((message) => message.includes(' lost after '));
        expect(lost).toHaveLength(1);
        expect(lost[0]).toMatch(
          new RegExp(`^Lock on ${key} \\(nightly\\) lost after \\d+ ms held: the lease was gone when renewing it`),
        );

        warnings.mockClear();
        await app.locks.acquire(uniqueKey('held-at-shutdown'), { ttl: TTL_MS });
        await app.close();
        expect(
          warnings.mock.calls.map(([message]) => String(message)).filter((message) => message.includes(' lost after ')),
        ).toEqual([]);
      } finally {
        warnings.mockRestore();
      }
    });

    it('FLUSHALL aborts the signal of every held lock within one ttl', async () => {
      const { locks } = await apps.start(store.options());
      const held = await Promise.all(
        [uniqueKey('flushed'), uniqueKey('flushed')].map((key) => locks.acquire(key, { ttl: TTL_MS })),
      );
      const aborted = Promise.all(held.map((lock) => abortedAt(lock.signal)));

      const flushedAt = performance.now();
      await Promise.all(store.servers.map((server) => server.command('FLUSHALL')));
      const at = await within(aborted, TTL_MS + 2000, 'lock.signal aborts');

      expect(Math.max(...at) - flushedAt).toBeLessThanOrEqual(TTL_MS + MARGIN_MS);
      for (const lock of held) {
        expect(lock.signal.reason).toBeInstanceOf(LockLostError);
        expect(await lock.release()).toBe(false);
      }
    });

    it('a lock left alone is not aborted (the checks above measure loss, not a timer)', async () => {
      const { locks } = await apps.start(store.options());
      const lock = await locks.acquire(uniqueKey('kept'), { ttl: TTL_MS });
      await new Promise((resolve) => setTimeout(resolve, TTL_MS + MARGIN_MS));
      expect(lock.signal.aborted).toBe(false);
      expect(await lock.release()).toBe(true);
    });
  },
);
