import { setTimeout as sleep } from 'node:timers/promises';
import { LockLostError, LockNotAcquiredError, LockOptionsError, type LockService } from '../../lib';
import { becomesFree, busyUntil, refusedNow, twoLockServices } from '../core/helpers/contenders';
import { rejectionOf } from '../core/helpers/timing';
import { eventually } from '../support/eventually';
import { trackLockApps, uniqueKey } from '../support/lock-app';
import { describeEachStore, StoreUnderTest, storesUnderTest } from '../support/store-matrix';

/** One grant seen by a caller: when it asked, when it got in, and the fence it got. */
interface Grant {
  readonly calledAt: number;
  readonly enteredAt: number;
  readonly fence: number;
}

/**
 * Pairs of grants where the second was asked for after the first was already granted, and yet got a fence
 * that is not greater: none may exist (fences increase in grant order, permits of one key alike).
 */
function fencesOutOfOrder(grants: readonly Grant[]): [Grant, Grant][] {
  const wrong: [Grant, Grant][] = [];
  for (const earlier of grants) {
    for (const later of grants)
      if (later.calledAt > earlier.enteredAt && later.fence <= earlier.fence) wrong.push([earlier, later]);
  }
  return wrong;
}

describeEachStore(
  'counting semaphore (%s store)',
  (_name, fixture) => {
    let store: StoreUnderTest;
    beforeAll(async () => {
      store = await fixture.setup();
    });
    afterAll(() => store?.teardown());
    const apps = trackLockApps();

    it('limit 3: 12 callers x 3 rounds over two services never have more than 3 inside, and fences rise in grant order', async () => {
      const [first, second] = await twoLockServices(store, apps);
      const key = uniqueKey('semaphore');
      let inside = 0;
      let maxInside = 0;
      const grants: Grant[] = [];
      const caller = async (locks: LockService): Promise<void> => {
        for (let round = 0; round < 3; round++) {
          const calledAt = performance.now();
          await locks.withLock(
            key,
            async (lock) => {
              maxInside = Math.max(maxInside, ++inside);
              grants.push({ calledAt, enteredAt: performance.now(), fence: lock.fence });
              await sleep(15);
              inside--;
            },
            { limit: 3, wait: 60_000 },
          );
        }
      };
      await Promise.all(Array.from({ length: 12 }, (_, i) => caller(i % 2 === 0 ? first : second)));

      expect(grants).toHaveLength(36);
      expect(maxInside).toBe(3);
      const distinctFences = new Set(grants.map((grant) => grant.fence)).size;
      // Every grant its own fence, on every store: on Redlock, before fences by stride, two permits granted at the
      // same moment could take the same highest value from different nodes (about one run in ten here).
      expect(distinctFences).toBe(36);
      expect(fencesOutOfOrder(grants)).toEqual([]);
      expect(await first.isLocked(key)).toBe(false);
    });

    it("a crashed holder's permit is reclaimed after its ttl, with no clean-up: a waiter gets in then", async () => {
      const [crashed, waiterSide] = await twoLockServices(store, apps);
      const key = uniqueKey('semaphore-crash');
      // A holder that never renews nor releases is, to the store, a holder whose process died.
      const grantedAt = performance.now();
      await Promise.all([0, 1].map(() => crashed.acquire(key, { limit: 2, ttl: 800, autoExtend: false })));
      expect(await waiterSide.tryAcquire(key, { limit: 2 })).toBeNull();

      const lock = await waiterSide.acquire(key, { limit: 2, wait: 10_000 });
      const after = performance.now() - grantedAt;
      expect(after).toBeGreaterThanOrEqual(700);
      // Two permits came back: a second waiter gets in too, without waiting.
      const second = await waiterSide.tryAcquire(key, { limit: 2 });
      expect(second).not.toBeNull();
      const info = await waiterSide.inspect(key);
      expect(info?.kind).toBe('semaphore');
      expect(info?.holders).toHaveLength(2);
      await lock.release();
      await second?.release();
    });

    it('a permit deleted under its holder (forceRelease) aborts its signal; the other holders keep theirs until deleted too', async () => {
      const [holderSide, operator] = await twoLockServices(store, apps);
      const key = uniqueKey('semaphore-force');
      const locks = await Promise.all([0, 1, 2].map(() => holderSide.acquire(key, { limit: 3, ttl: 600 })));
      const fences = locks.map((lock) => lock.fence);
      const info = await operator.inspect(key);
      expect(info?.kind).toBe('semaphore');
      expect(info?.holders.map((holder) => holder.fence).sort((a, b) => a - b)).toEqual(
        [...fences].sort((a, b) => a - b),
      );

      expect(await operator.forceRelease(key)).toBe(true);
      // The holders' service learns it at its next renewal (at once when it is the operator's own service).
      await eventually(
        async () => locks.every((lock) => lock.signal.aborted),
        3_000,
        'every permit holder saw its signal abort',
      );
      for (const lock of locks) expect(lock.signal.reason).toBeInstanceOf(LockLostError);
      // The next grant's fence is greater than every evicted one.
      const next = await operator.acquire(key, { limit: 3 });
      expect(next.fence).toBeGreaterThan(Math.max(...fences));
      for (const lock of locks) expect(await lock.release()).toBe(false);
      await next.release();
    });

    it('a release wakes a waiter at once (no polling): the waiter gets in long before the holder lease would end', async () => {
      const [holderSide, waiterSide] = await twoLockServices(store, apps);
      const key = uniqueKey('semaphore-wake');
      const held = await Promise.all([0, 1].map(() => holderSide.acquire(key, { limit: 2, ttl: 30_000 })));
      const waiting = waiterSide.acquire(key, { limit: 2, ttl: 30_000, wait: 20_000 });
      await sleep(300);
      const releasedAt = performance.now();
      await held[0].release();
      const lock = await waiting;
      // Woken by the release: a fallback would have waited for the 30 s lease.
      expect(performance.now() - releasedAt).toBeLessThan(5_000);
      await Promise.all([lock.release(), held[1].release()]);
    });

    it('another limit on the same key, or a mutex, is a LockOptionsError while the key is held; never an overlap', async () => {
      const [first, second] = await twoLockServices(store, apps);
      const key = uniqueKey('semaphore-mix');
      const permit = await first.acquire(key, { limit: 2 });

      const otherLimit = await rejectionOf(second.tryAcquire(key, { limit: 5 }));
      expect(otherLimit).toBeInstanceOf(LockOptionsError);
      expect((otherLimit as LockOptionsError).option).toBe('limit');
      expect((otherLimit as Error).message).toContain('semaphore with limit 2');
      // A call without `limit` asked for a mutex: the message says so, not "'limit': undefined".
      const mutexWanted = await rejectionOf(second.tryAcquire(key));
      expect(mutexWanted).toBeInstanceOf(LockOptionsError);
      expect((mutexWanted as Error).message).toMatch(
        /^Invalid lock option 'limit': not set \(a mutex\)\. Expected what ".*" is held as now: a semaphore with limit 2\./,
      );
      expect(await rejectionOf(second.tryAcquire(key, { mode: 'read' }))).toBeInstanceOf(LockOptionsError);
      expect(await rejectionOf(second.acquire(key, { mode: 'write', wait: 200 }))).toBeInstanceOf(LockOptionsError);
      await permit.release();

      // The other way round: a key held as a mutex refuses a semaphore.
      const mutex = await first.acquire(key);
      expect(await rejectionOf(second.tryAcquire(key, { limit: 2 }))).toBeInstanceOf(LockOptionsError);
      await mutex.release();
      // Free again: the key may be used as anything now (nothing to detect, nothing to overlap). On Redlock the
      // last node may apply the release a moment after the quorum did: meanwhile it counts as busy, not as a
      // mistake (a minority), hence a wait rather than one attempt. (A writer lease left on one node by the
      // mode: 'write' attempt above, granted by its second script after its own undo, made this take 10 s in
      // about one run in four: see TokenOrder (redlock/token-order.ts).)
      const again = await second.acquire(key, { limit: 5, wait: 15_000 });
      expect(again).not.toBeNull();
      await again?.release();
    });

    it('limit 1 is a semaphore of one: one holder at a time, refused beside a mutex use of the key', async () => {
      const [first, second] = await twoLockServices(store, apps);
      const key = uniqueKey('semaphore-one');
      const only = await first.acquire(key, { limit: 1 });
      expect(await second.tryAcquire(key, { limit: 1 })).toBeNull();
      expect(await rejectionOf(second.tryAcquire(key))).toBeInstanceOf(LockOptionsError);
      await only.release();
      const next = await second.tryAcquire(key, { limit: 1 });
      expect(next).not.toBeNull();
      await next?.release();
    });

    it("a full key's busy error says every permit is taken, not that another owner holds it", async () => {
      const [first, second] = await twoLockServices(store, apps);
      const key = uniqueKey('semaphore-full');
      const held = [await first.acquire(key, { limit: 2 }), await first.acquire(key, { limit: 2 })];
      const once = await rejectionOf(second.acquire(key, { limit: 2, wait: 0 }));
      expect(once).toBeInstanceOf(LockNotAcquiredError);
      expect((once as Error).message).toBe(
        `Lock on "${key}" not acquired: all 2 permits are taken. Retry later, or set the 'wait' option to queue for it.`,
      );
      const waited = await rejectionOf(second.acquire(key, { limit: 2, wait: 40 }));
      expect((waited as Error).message).toBe(
        `Lock on "${key}" not acquired: all 2 permits were still taken after waiting 40 ms. Retry later or raise the 'wait' option.`,
      );
      expect((waited as LockNotAcquiredError).details).toEqual({ wait: 40, limit: 2 });
      await Promise.all(held.map((lock) => lock.release()));
    });

    it('minHold on a permit: released early, it still counts against the limit until grant + minHold', async () => {
      const [holderSide, otherSide] = await twoLockServices(store, apps);
      const key = uniqueKey('semaphore-min-hold');
      // The library counts minHold from when it saw the grant: after this, and no later than grantedAt.
      const acquiredFrom = performance.now();
      const lock = await holderSide.acquire(key, { limit: 1, minHold: 800, ttl: 5_000 });
      const grantedAt = performance.now();
      expect(await lock.release()).toBe(true);
      await sleep(150);
      await busyUntil(
        acquiredFrom + 800,
        () => refusedNow(otherSide, key, { limit: 1 }),
        'a permit after the early release',
      );
      // Free within moments of grant + minHold, long before the 5 s ttl.
      await sleep(Math.max(0, grantedAt + 800 - performance.now()));
      await becomesFree(otherSide, key, 2_000, { limit: 1 });
    });

    it('renewal keeps a permit past its ttl; reentrancy borrows the permit; explicit extend works', async () => {
      const [locks] = await twoLockServices(store, apps);
      const key = uniqueKey('semaphore-renew');
      await locks.withLock(
        key,
        async (outer) => {
          // Past the 900 ms ttl: only renewal (each has 600 ms to come back) keeps it.
          await sleep(1_000);
          expect(outer.signal.aborted).toBe(false);
          // Nested in the same context: the permit is borrowed (no second permit is taken).
          const inner = await locks.acquire(key, { limit: 2, ttl: 300 });
          expect(inner.token).toBe(outer.token);
          await inner.release();
          expect((await locks.inspect(key))?.holders).toHaveLength(1);
          // Nested with another limit: refused, the context knows what it holds.
          expect(await rejectionOf(locks.acquire(key, { limit: 3 }))).toBeInstanceOf(LockOptionsError);
          // Nested as a mutex: refused, and the message names what the call asked for.
          const asMutex = await rejectionOf(locks.acquire(key));
          expect(asMutex).toBeInstanceOf(LockOptionsError);
          expect((asMutex as Error).message).toContain(
            "'limit': not set (a mutex). Expected what this context already holds",
          );
          await outer.extend(2_000);
        },
        { limit: 2, ttl: 900 },
      );
      expect(await locks.isLocked(key)).toBe(false);
    });

    it('invalid limit or mode values, limit with mode, and several keys are LockOptionsErrors naming the option', async () => {
      const [locks] = await twoLockServices(store, apps);
      for (const limit of [0, -1, 1.5, Number.NaN, Infinity, '3']) {
        const error = await rejectionOf(locks.acquire(uniqueKey('bad-limit'), { limit: limit as number }));
        expect(error).toBeInstanceOf(LockOptionsError);
        expect((error as LockOptionsError).option).toBe('limit');
      }
      for (const mode of ['READ', 'exclusive', 1]) {
        const error = await rejectionOf(locks.acquire(uniqueKey('bad-mode'), { mode: mode as 'read' }));
        expect((error as LockOptionsError).option).toBe('mode');
      }
      expect(await rejectionOf(locks.acquire(uniqueKey('both'), { limit: 2, mode: 'read' }))).toBeInstanceOf(
        LockOptionsError,
      );
      const multi = await rejectionOf(locks.acquire([uniqueKey('a'), uniqueKey('b')], { limit: 2 }));
      expect(multi).toBeInstanceOf(LockOptionsError);
      expect((multi as Error).message).toContain('one key per call');
      expect(await rejectionOf(locks.acquire([uniqueKey('a'), uniqueKey('b')], { mode: 'read' }))).toBeInstanceOf(
        LockOptionsError,
      );
    });
  },
  storesUnderTest(['memory', 'redis', 'redlock3']),
);
