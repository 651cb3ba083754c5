import { setTimeout as sleep } from 'node:timers/promises';
import Redis from 'ioredis';
import type { AcquireOptions, LockService } from '../../lib';
import { LockKeyNamer } from '../../lib/keys';
import { createLockApp, trackLockApps, uniqueKey } from '../support/lock-app';
import { commandStats, statsDelta } from '../support/redis-stats';
import { StoreUnderTest, storeRows, storesUnderTest } from '../support/store-matrix';
import { eventually } from '../support/eventually';
import { subscribersOf } from '../support/waiters';
import { rejectionOf } from './helpers/timing';

/** Long enough that no lease expiry or fallback wake-up plays a part. */
const LONG_TTL_MS = 10_000;

/**
 * A release of a single-key mutex that a caller of the same process waits for goes straight to that caller
 * in one script (README, "Waiting"): released and granted in one step, with no PUBLISH and no attempt of
 * the waiter's own. These tests pin what a caller sees of it, and the cases where it must not happen or
 * must fall back to the plain release.
 */
/** The module's default `keyPrefix`, which these tests keep. */
const names = new LockKeyNamer('lock:');

describe.each(storeRows(storesUnderTest(['redis'])))(
  'local hand-over of a released lock (%s store)',
  (_name, fixture) => {
    let store: StoreUnderTest;
    let raw: Redis;
    beforeAll(async () => {
      store = await fixture.setup();
      raw = new Redis(store.servers[0].url);
    });
    afterAll(async () => {
      raw?.disconnect();
      await store?.teardown();
    });
    const apps = trackLockApps();
    const url = (): string => store.servers[0].url;

    /**
     * Waits until a caller sleeps on the key: subscribed to its release channel (after its first attempt
     * failed), then past the attempt that follows the subscription.
     */
    async function asleep(key: string): Promise<void> {
      await eventually(
        async () => (await subscribersOf(raw, names.names(key).channel)) >= 1,
        5_000,
        'the waiter subscribed',
      );
      await sleep(100);
    }

    /** A holder of `key`, and a caller of the same service asleep waiting for it, cancellable by `controller`. */
    async function holderAndCancellableWaiter(locks: LockService, key: string, options: AcquireOptions = {}) {
      const holder = await locks.acquire(key);
      const controller = new AbortController();
      const waiting = rejectionOf(locks.acquire(key, { ...options, wait: LONG_TTL_MS, signal: controller.signal }));
      await asleep(key);
      return { holder, controller, waiting };
    }

    it('the waiter holds the lock after one script, with the next fence, and nothing is published', async () => {
      const { locks } = await apps.start(store.options({ ttl: LONG_TTL_MS }));
      const key = uniqueKey('handover');
      const holder = await locks.acquire(key);
      const waiting = locks.acquire(key, { wait: LONG_TTL_MS });
      await asleep(key);

      const before = await commandStats(url());
      expect(await holder.release()).toBe(true);
      const next = await waiting;
      const delta = statsDelta(before, await commandStats(url()));

      expect(next.fence).toBeGreaterThan(holder.fence);
      expect(next.signal.aborted).toBe(false);
      // One script released and granted: no PUBLISH, no DEL, no acquire attempt of the waiter's own.
      expect(delta.publish ?? 0).toBe(0);
      expect(delta.del ?? 0).toBe(0);
      expect((delta.evalsha ?? 0) + (delta.eval ?? 0)).toBe(1);
      // One fence taken (one step of the counter), and it is the waiter's.
      expect(delta.incr).toBe(1);
      expect(Number(await raw.get(names.names(key).fenceKey))).toBe(next.fence);
      // It is the waiter's lease now: the old holder's token is gone, the new one renews and releases.
      expect(await holder.release()).toBe(false);
      await next.extend(LONG_TTL_MS);
      expect(await locks.isLocked(key)).toBe(true);
      expect(await next.release()).toBe(true);
      expect(await locks.isLocked(key)).toBe(false);
    });

    it('several waiters get the lock one after another, each with a greater fence, never two at once', async () => {
      const { locks } = await apps.start(store.options({ ttl: LONG_TTL_MS }));
      const key = uniqueKey('queue');
      let inside = 0;
      let mostInside = 0;
      const fences: number[] = [];
      await Promise.all(
        Array.from({ length: 6 }, () =>
          locks.withLock(
            key,
            async (lock) => {
              mostInside = Math.max(mostInside, ++inside);
              fences.push(lock.fence);
              await sleep(5);
              inside--;
            },
            { wait: LONG_TTL_MS },
          ),
        ),
      );
      expect(mostInside).toBe(1);
      expect(fences).toEqual([...fences].sort((a, b) => a - b));
      expect(new Set(fences).size).toBe(fences.length);
      expect(await locks.isLocked(key)).toBe(false);
    });

    it('a holder whose lease was already gone hands nothing over: release() is false and the waiter takes the key itself', async () => {
      const { locks } = await apps.start(store.options({ ttl: LONG_TTL_MS, autoExtend: false }));
      const key = uniqueKey('gone');
      const holder = await locks.acquire(key);
      const waiting = locks.acquire(key, { wait: LONG_TTL_MS });
      await asleep(key);
      // Expiry is not announced: deleting the key without a PUBLISH leaves the waiter asleep, as expiry would.
      await raw.del(names.names(key).lockKey);

      expect(await holder.release()).toBe(false);
      const next = await waiting;
      expect(next.fence).toBeGreaterThan(holder.fence);
      // Really held in Redis (a hand-over of a key nobody held would have granted a lease that is not there).
      expect(await locks.isLocked(key)).toBe(true);
      await next.extend(LONG_TTL_MS);
      expect(await next.release()).toBe(true);
    });

    it('a holder that knows its lock lost and asks again at once does not take the key ahead of the waiter its release claimed', async () => {
      const { locks } = await apps.start(store.options({ ttl: LONG_TTL_MS }));
      const key = uniqueKey('lost-then-again');
      const holder = await locks.acquire(key);
      const waiting = locks.acquire(key, { wait: LONG_TTL_MS });
      await asleep(key);
      await raw.del(names.names(key).lockKey);
      // The renewal finds the key gone: the holder knows its lock lost.
      await rejectionOf(holder.extend());
      expect(holder.signal.aborted).toBe(true);

      // A lost lock's release() answers without waiting for Redis, except while a caller of this process waits
      // for the key: answered before the release's hand-over, the holder's next attempt would go out right
      // behind it and take the key the waiter had been waiting for.
      expect(await holder.release()).toBe(false);
      expect(await locks.tryAcquire(key)).toBeNull();
      const next = await waiting;
      expect(next.fence).toBeGreaterThan(holder.fence);
      expect(await next.release()).toBe(true);
    });

    it('a waiter cancelled once the release claimed it gets no lock, and the key it was handed is released', async () => {
      const { locks } = await apps.start(store.options({ ttl: LONG_TTL_MS }));
      const key = uniqueKey('claimed-then-cancelled');
      const reason = new Error('gave up while the hand-over was on its way');
      const { holder, controller, waiting } = await holderAndCancellableWaiter(locks, key);
      // The release claims the waiter synchronously; the signal aborts before the answer comes.
      const released = holder.release();
      controller.abort(reason);
      expect(await released).toBe(true);
      expect(await waiting).toBe(reason);
      await eventually(async () => !(await locks.isLocked(key)), 2_000, 'the handed-over key released');
    });

    it('the releases made by shutdown are not handed to waiters about to be refused', async () => {
      const app = await createLockApp(store.options({ ttl: LONG_TTL_MS }));
      const key = uniqueKey('shutdown-release');
      await app.locks.acquire(key);
      const waiting = rejectionOf(app.locks.acquire(key, { wait: LONG_TTL_MS }));
      await asleep(key);
      const before = await commandStats(url());
      await app.close();
      const delta = statsDelta(before, await commandStats(url()));
      expect((await waiting)?.constructor.name).toBe('LockUnavailableError');
      // A plain release: deleted and published, no fence taken for a grant (a grant steps the fence counter).
      expect(delta.del).toBe(1);
      expect(delta.incr ?? 0).toBe(0);
      expect(await raw.exists(names.names(key).lockKey)).toBe(0);
    });

    it('a hand-over answered after the new lease could be vouched for is taken back; the waiter gets a lock of its own', async () => {
      const { locks } = await apps.start(store.options({ ttl: LONG_TTL_MS, commandTimeout: 5_000 }));
      const key = uniqueKey('too-late');
      const holder = await locks.acquire(key);
      const waiting = locks.acquire(key, { wait: LONG_TTL_MS, ttl: 1_000 });
      await asleep(key);
      const released = holder.release();
      // Redis hands the key over at once; the answer is read only after the waiter's 1 s lease has run out.
      blockEventLoop(1_100);
      expect(await released).toBe(true);
      const next = await waiting;
      expect(next.signal.aborted).toBe(false);
      // Its own grant: the hand-over's fence was taken back with the lease; a new one, above both, is the waiter's.
      expect(next.fence).toBeGreaterThan(holder.fence);
      expect(Number(await raw.get(names.names(key).fenceKey))).toBe(next.fence);
      expect(await next.release()).toBe(true);
    });

    it('a hand-over answered too late to a waiter cancelled meanwhile leaves the key free, not locked for nobody', async () => {
      const { locks } = await apps.start(store.options({ ttl: LONG_TTL_MS, commandTimeout: 5_000 }));
      const key = uniqueKey('too-late-cancelled');
      const { holder, controller, waiting } = await holderAndCancellableWaiter(locks, key, { ttl: 1_000 });
      // Redis is frozen before the hand-over reaches it, so the 1 s lease it grants starts only at resume(), while
      // the waiter's validity, counted from the send, is over by then. (A blocked event loop did the same only
      // because the client writes at the end of the tick: sent at once, the lease would run out in the block.)
      store.servers[0].pause();
      let resumed = false;
      try {
        const released = holder.release();
        controller.abort(new Error('cancelled'));
        await sleep(1_100);
        store.servers[0].resume();
        resumed = true;
        await released;
        await waiting;
      } finally {
        if (!resumed) store.servers[0].resume();
      }
      // Freed while the lease granted at resume() still had most of its second: taken back, not expired. Past
      // the deadline eventually checks once more, so a stall of this process cannot fail it, only expiry pass it.
      await eventually(async () => (await raw.exists(names.names(key).lockKey)) === 0, 400, 'the key taken back');
    });

    it('a claim that came to nothing does not hold shutdown up: the waiter is refused at once', async () => {
      const first = await createLockApp(store.options({ ttl: LONG_TTL_MS, autoExtend: false }));
      const second = await apps.start(store.options({ ttl: LONG_TTL_MS }));
      const key = uniqueKey('declined');
      const holder = await first.locks.acquire(key);
      const waiting = rejectionOf(first.locks.acquire(key, { wait: LONG_TTL_MS }));
      await asleep(key);
      // The holder's lease ends unannounced and another instance takes the key: the hand-over finds
      // nothing to hand, and the waiter, attempting itself, finds the key busy and sleeps again.
      await raw.del(names.names(key).lockKey);
      const other = await second.locks.acquire(key);
      expect(await holder.release()).toBe(false);
      await sleep(100);
      const closingAt = performance.now();
      await first.close();
      // Before the fix shutdown waited its whole 2 s budget for that hand-over (never less than 2 s).
      expect(performance.now() - closingAt).toBeLessThan(1_950);
      expect((await waiting)?.constructor.name).toBe('LockUnavailableError');
      await other.release();
    });

    it('a waiter cancelled before the release leaves the queue: the key is free afterwards', async () => {
      const { locks } = await apps.start(store.options({ ttl: LONG_TTL_MS }));
      const key = uniqueKey('cancelled');
      const reason = new Error('gave up');
      const { holder, controller, waiting } = await holderAndCancellableWaiter(locks, key);
      controller.abort(reason);
      expect(await waiting).toBe(reason);
      expect(await holder.release()).toBe(true);
      expect(await locks.isLocked(key)).toBe(false);
    });

    it('a shutdown that begins while a release hands the key over leaves it free, not held for nobody', async () => {
      const app = await createLockApp(store.options({ ttl: LONG_TTL_MS }));
      const key = uniqueKey('shutdown');
      const holder = await app.locks.acquire(key);
      const waiting = rejectionOf(app.locks.acquire(key, { wait: LONG_TTL_MS }));
      await asleep(key);
      // The release claims the waiter and sends the hand-over; shutdown starts before its answer.
      const released = holder.release();
      const closing = app.close();
      await released;
      await closing;
      await waiting;
      expect(await raw.exists(names.names(key).lockKey)).toBe(0);
    });

    it('a waiter for several keys, a semaphore permit or a reader is woken to attempt, not handed over', async () => {
      const { locks } = await apps.start(store.options({ ttl: LONG_TTL_MS }));
      const key = uniqueKey('multi');
      const other = uniqueKey('multi-other');
      const holder = await locks.acquire(key);
      const waiting = locks.acquire([key, other], { wait: LONG_TTL_MS });
      await asleep(key);
      const before = await commandStats(url());
      await holder.release();
      const next = await waiting;
      const delta = statsDelta(before, await commandStats(url()));
      // The plain release (DEL and PUBLISH), then the waiter's own attempt.
      expect(delta.del).toBe(1);
      expect(delta.publish).toBe(1);
      expect(next.fence).toBeGreaterThan(holder.fence);
      await next.release();
    });

    it('with nobody elsewhere listening, every release but the last goes to the next waiter: nothing is published before', async () => {
      const { locks } = await apps.start(store.options({ ttl: LONG_TTL_MS }));
      const key = uniqueKey('alone');
      const holder = await locks.acquire(key);
      const done = Array.from({ length: 6 }, () => locks.withLock(key, () => sleep(2), { wait: LONG_TTL_MS }));
      await asleep(key);
      const before = await commandStats(url());
      await holder.release();
      await Promise.all(done);
      const delta = statsDelta(before, await commandStats(url()));
      // Seven releases: six hand-overs, and the last one, with nobody left waiting, deletes and publishes.
      expect(delta.del).toBe(1);
      expect(delta.publish).toBe(1);
    });

    it("another instance's waiter is not starved by a busy one: releases are published again while it listens", async () => {
      const [busy, other] = await Promise.all([
        apps.start(store.options({ ttl: LONG_TTL_MS })),
        apps.start(store.options({ ttl: LONG_TTL_MS })),
      ]);
      const key = uniqueKey('fair');
      let othersTurn = false;
      const stopAt = performance.now() + 5_000;
      const loops = Array.from({ length: 4 }, async () => {
        while (!othersTurn && performance.now() < stopAt)
          await busy.locks.withLock(key, () => sleep(1), { wait: LONG_TTL_MS });
      });
      await sleep(50);
      const lock = await other.locks.acquire(key, { wait: LONG_TTL_MS });
      // Granted while the busy instance was still looping (its loops stop only once this is set).
      const grantedInTime = performance.now() < stopAt;
      othersTurn = true;
      await lock.release();
      await Promise.all(loops);
      expect(grantedInTime).toBe(true);
    });
  },
);

/** Keeps the event loop busy for `ms`, as a long synchronous task would: replies are read only afterwards. */
function blockEventLoop(ms: number): void {
  const until = performance.now() + ms;
  while (performance.now() < until) {
    // busy
  }
}
