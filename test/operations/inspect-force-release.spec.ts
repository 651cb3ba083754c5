import { Logger } from '@nestjs/common';
import { LockLostError } from '../../lib';
import { abortedAt, within } from '../support/deadlines';
import { trackLockApps, uniqueKey } from '../support/lock-app';
import { StoreUnderTest, storeRows, storesUnderTest } from '../support/store-matrix';

const TTL_MS = 3000;
/** One renewal period: auto-extension renews about every ttl/3. */
const RENEWAL_PERIOD_MS = TTL_MS / 3;
/** Slack for a round trip and timers on a loaded 2-core machine; the bound stays well below the ttl (not expiry). */
const SLACK_MS = 500;

/**
 * The operator's tools, across instances: `inspect` names who holds a key, `forceRelease` takes it from
 * them. On Redis and Redlock the holder and the operator are two LockModules (two instances) on the same
 * servers; in-process, one module is both.
 */
describe.each(storeRows(storesUnderTest(['memory', 'redis', 'redlock3'])))(
  'inspect and forceRelease (%s store)',
  (_name, fixture) => {
    let store: StoreUnderTest;
    beforeAll(async () => {
      store = await fixture.setup();
    });
    afterAll(() => store?.teardown());
    const apps = trackLockApps();

    /** The holder's service, and the operator's: another instance when the store is shared. */
    async function holderAndOperator() {
      const holder = await apps.start(store.options({ instance: 'billing-7f9c:101', ttl: TTL_MS }));
      const operator = store.sharedAcrossModules
        ? await apps.start(store.options({ instance: 'ops-console:202', ttl: TTL_MS }))
        : holder;
      return { holder: holder.locks, operator: operator.locks };
    }

    it("inspect: null when free; else the holder's instance, remaining lease and fence (the token only to its own service)", async () => {
      const { holder, operator } = await holderAndOperator();
      const key = uniqueKey('inspected');
      expect(await operator.inspect(key)).toBeNull();

      const lock = await holder.acquire(key);
      const seen = await operator.inspect(key);
      expect(seen).toMatchObject({
        key,
        kind: 'mutex',
        holders: [{ instance: 'billing-7f9c:101', fence: lock.fence }],
      });
      expect(seen!.holders).toHaveLength(1);
      expect(seen!.holders[0].ttlLeft).toBeGreaterThan(0);
      expect(seen!.holders[0].ttlLeft).toBeLessThanOrEqual(TTL_MS);
      if (operator !== holder) expect(seen!.holders[0]).not.toHaveProperty('token');
      expect((await holder.inspect(key))!.holders[0].token).toBe(lock.token);

      await lock.release();
      expect(await operator.inspect(key)).toBeNull();
    });

    it('forceRelease evicts the holder: its signal aborts within one renewal period, a waiter gets the key, the next fence is greater', async () => {
      const { holder, operator } = await holderAndOperator();
      const key = uniqueKey('stuck');
      const stuck = await holder.acquire(key);
      const aborted = abortedAt(stuck.signal);
      // A waiter of the holder's instance, queued long before the lease would expire on its own.
      const waiter = holder.acquire(key, { wait: 20_000 });
      const warn = vi.spyOn(operator.logger, 'warn');
      try {
        const releasedAt = performance.now();
        expect(await operator.forceRelease(key)).toBe(true);
        expect(warn).toHaveBeenCalledWith(expect.stringMatching(new RegExp(`${key}.*billing-7f9c:101`)));
        // One warning for one operator action. In-process the holder is this very service: the warning says it lost
        // the lock, and its loss is not warned of a second time (a holder elsewhere warns when it finds out).
        expect(warn).toHaveBeenCalledTimes(1);
        if (operator === holder) {
          expect(warn).toHaveBeenCalledWith(
            expect.stringMatching(/This service's holder lost it now \(its signal aborted\)\.$/),
          );
        } else {
          expect(warn).toHaveBeenCalledWith(
            expect.stringContaining('A holder elsewhere learns it at its next renewal'),
          );
        }

        const at = await within(aborted, TTL_MS + 2_000, "the evicted holder's signal");
        // In-process, the holder is told at once; elsewhere, at its next renewal.
        expect(at - releasedAt).toBeLessThanOrEqual(operator === holder ? SLACK_MS : RENEWAL_PERIOD_MS + SLACK_MS);
        expect(stuck.signal.reason).toBeInstanceOf(LockLostError);

        const next = await within(waiter, TTL_MS, 'the waiter, woken by the announced release');
        expect(next.fence).toBeGreaterThan(stuck.fence);
        expect(await stuck.release()).toBe(false);
        expect(await next.release()).toBe(true);
      } finally {
        warn.mockRestore();
      }
    });

    it('forceRelease of a free key is false and logs nothing', async () => {
      const { operator } = await holderAndOperator();
      const warn = vi.spyOn(Logger.prototype, 'warn');
      try {
        expect(await operator.forceRelease(uniqueKey('free'))).toBe(false);
        expect(warn).not.toHaveBeenCalled();
      } finally {
        warn.mockRestore();
      }
    });
  },
);
