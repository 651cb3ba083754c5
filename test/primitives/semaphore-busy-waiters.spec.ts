import { setTimeout as sleep } from 'node:timers/promises';
import { LOCK_STORE } from '../../lib/lock.constants';
import type { AcquireOutcome, AcquireRequest, LockStore } from '../../lib/stores/lock-store.interface';
import { connected, trackLockApps, uniqueKey } from '../support/lock-app';
import { describeEachStore, type StoreUnderTest, storesUnderTest } from '../support/store-matrix';

const LIMIT = 4;
const CALLERS = 16;
const HELD_MS = 1;
const GRANTS = 240;
/**
 * Attempts per grant allowed: one, plus the first round's refusals (CALLERS - LIMIT, spread over GRANTS) and a
 * margin for a freed permit that two wake-ups reach (a grant that saw a permit left passes the turn on, and the
 * announcement of the release that freed it wakes a waiter too). Waiters woken for every grant only to read a
 * lease end again, or attempting again in step for every release counted while they were refused, make it two
 * to three and a half.
 */
const MAX_ATTEMPTS_PER_GRANT = 1.6;

/**
 * A busy semaphore whose waiters are all in one process: each permit let go goes to one waiter, which gets in
 * with one attempt. A release wakes the longest sleeper, or, when nobody sleeps, one of the waiters refused while
 * it was counted; waiters queued without an attempt (newcomers behind the process's sleepers) are handed the
 * lease end to watch by whoever gets in ahead of them, instead of being woken to read one.
 */
describeEachStore(
  'a busy semaphore with its waiters in one process (%s store)',
  (name, fixture) => {
    let store: StoreUnderTest;
    beforeAll(async () => {
      store = await fixture.setup();
    });
    afterAll(() => store?.teardown());
    const apps = trackLockApps();

    it(`${CALLERS} callers on ${LIMIT} permits, each held ${HELD_MS} ms: about one attempt per grant`, async () => {
      const app = await apps.start(store.options());
      const locks = await connected(app.locks);
      const lockStore = app.module.get<LockStore>(LOCK_STORE);
      const key = uniqueKey('busy-semaphore');
      let attempts = 0;
      let refused = 0;
      const acquire = lockStore.acquire.bind(lockStore);
      lockStore.acquire = async (request: AcquireRequest): Promise<AcquireOutcome> => {
        attempts++;
        const outcome = await acquire(request);
        if (!outcome.acquired) refused++;
        return outcome;
      };
      let grants = 0;
      let holders = 0;
      let overlaps = 0;
      await Promise.all(
        Array.from({ length: CALLERS }, async () => {
          while (grants < GRANTS) {
            const permit = await locks.acquire(key, { limit: LIMIT, wait: 30_000 });
            grants++;
            if (++holders > LIMIT) overlaps++;
            await sleep(HELD_MS);
            holders--;
            await permit.release();
          }
        }),
      );
      lockStore.acquire = acquire;
      console.log(`${name}: ${attempts} attempts for ${grants} grants`);
      expect(overlaps).toBe(0);
      expect(attempts - refused).toBe(grants);
      expect(
        attempts / grants,
        `${name}: ${attempts} attempts, ${refused} refused, for ${grants} grants`,
      ).toBeLessThanOrEqual(MAX_ATTEMPTS_PER_GRANT);
    });
  },
  storesUnderTest(['memory', 'redis', 'redlock3']),
);
