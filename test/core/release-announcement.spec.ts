import { setTimeout as sleep } from 'node:timers/promises';
import Redis from 'ioredis';
import { LockNotAcquiredError } from '../../lib';
import { LockKeyNamer } from '../../lib/keys';
import { resolveLockOptions } from '../../lib/options/module-options.resolver';
import { createLockStore } from '../../lib/stores/lock-store.factory';
import { eventually } from '../support/eventually';
import { trackLockApps, uniqueKey } from '../support/lock-app';
import { StoreUnderTest, storeRows, storesUnderTest } from '../support/store-matrix';
import { subscribersOf } from '../support/waiters';
import { twoLockServices } from './helpers/contenders';

/** Long enough that no lease expiry or fallback wake-up at a lease's end plays a part. */
const LONG_TTL_MS = 10_000;
/** Below LONG_TTL_MS: a waiter that no announcement wakes gives up with LockNotAcquiredError. */
const WAIT_MS = 7_000;

/** The module's default `keyPrefix`, which these tests keep. */
const names = new LockKeyNamer('lock:');

/**
 * A release is announced (PUBLISH on the key's channel) only when somebody may wait for it (README,
 * "Waiting"): an attempt refused by the lease marked the key awaited, or callers of the releasing process
 * watch the key. Nobody waits for most releases, and the PUBLISH was the most expensive command of a
 * release for Redis. These tests pin both halves: nothing published for nobody, and every kind of waiter
 * a lease refused still woken by its release, far sooner than the lease's end.
 */
describe.each(storeRows(storesUnderTest(['redis', 'redlock3'])))(
  'release announcements (%s store)',
  (_name, fixture) => {
    let store: StoreUnderTest;
    let raws: Redis[];
    beforeAll(async () => {
      store = await fixture.setup();
      raws = store.servers.map((server) => new Redis(server.url));
    });
    afterAll(async () => {
      for (const raw of raws ?? []) raw.disconnect();
      await store?.teardown();
    });
    const apps = trackLockApps();

    /**
     * How many announcements of `key`'s releases reach a listener subscribed to its channel on every server
     * while `run` runs (and 150 ms after). Counted on the key's own channel, not as PUBLISH calls of the whole
     * server: a Redlock release of an earlier test may still reach its last node (it is not waited for once a
     * quorum answered) and publish there. A listener does not make a release announced (only marks and the
     * releasing process's own waiters do), so it observes without changing what it observes.
     */
    async function announcements(key: string, run: () => Promise<unknown>): Promise<number> {
      const channel = names.names(key).channel;
      const listeners = store.servers.map((server) => new Redis(server.url));
      try {
        let heard = 0;
        for (const listener of listeners) listener.on('message', (from: string) => (heard += from === channel ? 1 : 0));
        await Promise.all(listeners.map((listener) => listener.subscribe(channel)));
        await run();
        await sleep(150);
        return heard;
      } finally {
        for (const listener of listeners) listener.disconnect();
      }
    }

    /**
     * How many servers make a quorum (1 on one Redis). A Redlock grant whose answer from one node came too late
     * is taken back there: that node may refuse an attempt for the lease (and keep the mark the holder's release
     * does not take, since the lease is no longer its own there) or grant it and undo it (no mark). So marks are
     * counted against a quorum, where the lease is held.
     */
    const quorum = (): number => Math.floor(store.servers.length / 2) + 1;

    /** How many servers hold `redisKey`. */
    async function onServers(redisKey: string): Promise<number> {
      const found = await Promise.all(raws.map((raw) => raw.exists(redisKey)));
      return found.reduce((total, one) => total + one, 0);
    }

    /** Resolves once `key`'s waiter of another service listens for its releases on every server. */
    async function listening(key: string): Promise<void> {
      const channel = names.names(key).channel;
      await eventually(
        async () => (await Promise.all(raws.map((raw) => subscribersOf(raw, channel)))).every((count) => count >= 1),
        5_000,
        'the waiter subscribed',
      );
      // Past the attempt that follows the subscription.
      await sleep(150);
    }

    it('a release nobody waits for publishes nothing, and marks nothing', async () => {
      const { locks } = await apps.start(store.options({ ttl: LONG_TTL_MS }));
      const key = uniqueKey('alone');
      await locks.withLock(key, () => undefined);
      const heard = await announcements(key, async () => {
        for (let i = 0; i < 5; i++) {
          const lock = await locks.acquire(key);
          expect(await lock.release()).toBe(true);
        }
      });
      expect(heard).toBe(0);
      expect(await onServers(names.names(key).awaitedKey)).toBe(0);
    });

    it("a release another instance's waiter was refused by is published, wakes it long before the lease's end, and takes the mark", async () => {
      const [holderSide, waiterSide] = await twoLockServices(store, apps, { ttl: LONG_TTL_MS });
      const key = uniqueKey('awaited');
      const holder = await holderSide.acquire(key);
      const waiting = waiterSide.acquire(key, { wait: WAIT_MS });
      await listening(key);
      // The waiter's refused attempts marked the key on the nodes that refused them.
      expect(await onServers(names.names(key).awaitedKey)).toBeGreaterThan(0);

      let wokenAfter = 0;
      let next: Awaited<typeof waiting> | undefined;
      const heard = await announcements(key, async () => {
        const releasedAt = performance.now();
        expect(await holder.release()).toBe(true);
        next = await waiting;
        wokenAfter = performance.now() - releasedAt;
      });
      if (!next) throw new Error('the waiter got no lock');

      expect(heard).toBeGreaterThanOrEqual(1);
      expect(wokenAfter).toBeLessThan(3_000);
      expect(next.fence).toBeGreaterThan(holder.fence);
      // Granted at its attempt after the wake-up: nothing refused it since, so no mark is left behind where the
      // holder's lease was.
      expect(await onServers(names.names(key).awaitedKey)).toBeLessThan(quorum());
      const granted = next;
      // And so the next release, which nobody waits for, is not announced.
      expect(await announcements(key, () => granted.release())).toBe(0);
    });

    it('a hold-over (minHold) that a waiter was refused by is announced too, and the waiter gets the key when the hold ends', async () => {
      const [holderSide, waiterSide] = await twoLockServices(store, apps, { ttl: LONG_TTL_MS });
      const key = uniqueKey('held-over');
      const holder = await holderSide.acquire(key, { minHold: 1_500 });
      const waiting = waiterSide.acquire(key, { wait: WAIT_MS });
      await listening(key);
      let next: Awaited<typeof waiting> | undefined;
      const heard = await announcements(key, async () => {
        expect(await holder.release()).toBe(true);
        next = await waiting;
      });
      // Announced: the waiter re-read the key's remaining time (the hold) instead of sleeping toward the lease's end.
      expect(heard).toBeGreaterThanOrEqual(1);
      await next?.release();
    });

    it("a reader refused by another instance's writer, and a writer refused by it, are woken by its release", async () => {
      const [writerSide, waiterSide] = await twoLockServices(store, apps, { ttl: LONG_TTL_MS });
      for (const mode of ['read', 'write'] as const) {
        const key = uniqueKey(`rw-${mode}`);
        const writer = await writerSide.acquire(key, { mode: 'write' });
        const waiting = waiterSide.acquire(key, { mode, wait: WAIT_MS });
        await listening(key);
        const releasedAt = performance.now();
        await writer.release();
        const next = await waiting;
        expect(performance.now() - releasedAt).toBeLessThan(3_000);
        await next.release();
      }
    });

    it("a reader refused by a waiting writer's intent is woken by that writer's release once it got in", async () => {
      const [first, second] = await twoLockServices(store, apps, { ttl: LONG_TTL_MS });
      const third = (await apps.start(store.options({ ttl: LONG_TTL_MS }))).locks;
      const key = uniqueKey('intent');
      const reader = await first.acquire(key, { mode: 'read' });
      // A writer waits behind the reader: its intent is recorded, and new readers queue behind it.
      const writing = second.acquire(key, { mode: 'write', wait: WAIT_MS });
      await eventually(
        async () => (await onServers(names.names(key).writerKey)) > 0,
        5_000,
        "the writer's intent recorded",
      );
      const lateReader = third.acquire(key, { mode: 'read', wait: WAIT_MS });
      await sleep(300);
      await reader.release();
      const writer = await writing;
      await sleep(200);
      const releasedAt = performance.now();
      await writer.release();
      const next = await lateReader;
      // Not at the end of the intent it was refused by (the writer's ttl, 10 s): woken by the release.
      expect(performance.now() - releasedAt).toBeLessThan(3_000);
      await next.release();
    });

    it("a writer queued behind readers that then meets another writer's lease marks the key too", async () => {
      // The writer's own path (WRITE_ACQUIRE_SCRIPT), taken by every attempt of a writer once it queued behind
      // readers: the lease it meets there is released through RELEASE_SCRIPT like any other.
      const lockStore = createLockStore(resolveLockOptions(store.options({ ttl: LONG_TTL_MS })));
      try {
        const key = names.names(uniqueKey('queued-writer'));
        expect((await lockStore.acquire({ keys: [key], token: 'other-writer|test', ttl: LONG_TTL_MS })).acquired).toBe(
          true,
        );
        expect(await onServers(key.awaitedKey)).toBe(0);
        const refused = await lockStore.acquire({
          keys: [key],
          token: 'queued-writer|test',
          ttl: LONG_TTL_MS,
          queued: true,
        });
        expect(refused.acquired).toBe(false);
        expect(await onServers(key.awaitedKey)).toBeGreaterThanOrEqual(quorum());
        expect(await lockStore.release([key], 'other-writer|test')).toBe(true);
        expect(await onServers(key.awaitedKey)).toBeLessThan(quorum());
      } finally {
        await lockStore.close();
      }
    });

    it('an attempt that will not wait (tryAcquire, wait: 0) leaves no mark, and the release it was refused by is not announced', async () => {
      const [holderSide, otherSide] = await twoLockServices(store, apps, { ttl: LONG_TTL_MS });
      for (const mode of ['write', 'read'] as const) {
        const key = uniqueKey(`no-wait-${mode}`);
        const holder = await holderSide.acquire(key);
        // Under load a Redlock acquisition may itself be refused before it is granted (its own attempts splitting
        // the nodes, or a late answer being taken back), and a refused attempt that may wait marks the key, as any
        // waiter's does. Only what the attempts below leave is under test.
        const awaitedKey = names.names(key).awaitedKey;
        await Promise.all(raws.map((raw) => raw.del(awaitedKey)));
        expect(await otherSide.tryAcquire(key, { mode })).toBeNull();
        await expect(otherSide.acquire(key, { mode, wait: 0 })).rejects.toBeInstanceOf(LockNotAcquiredError);
        expect(await onServers(awaitedKey)).toBe(0);
        expect(await announcements(key, () => holder.release())).toBe(0);
      }
    });

    it('a refusal marks the key that refused it, for 2 s longer than its lease; a two-key lock announces only that key', async () => {
      const lockStore = createLockStore(resolveLockOptions(store.options({ ttl: LONG_TTL_MS })));
      try {
        const [first, second, free] = ['pair-a', 'pair-b', 'free'].map((label) => names.names(uniqueKey(label)));
        expect(
          (await lockStore.acquire({ keys: [first, second], token: 'pair-holder|test', ttl: 5_000 })).acquired,
        ).toBe(true);
        // Refused at its second key: that key is marked, not the free one before it.
        expect(
          (await lockStore.acquire({ keys: [free, second], token: 'refused|test', ttl: LONG_TTL_MS })).acquired,
        ).toBe(false);
        for (const raw of raws) {
          const [lease, mark] = [await raw.pttl(second.lockKey), await raw.pttl(second.awaitedKey)];
          // A node that took the lease back after the refusal (see quorum) keeps a mark without it.
          if (mark < 0 || lease < 0) continue;
          expect(mark - lease).toBeGreaterThan(1_500);
          expect(mark).toBeLessThanOrEqual(lease + 2_000 + 50);
        }
        expect(await onServers(second.awaitedKey)).toBeGreaterThanOrEqual(quorum());
        expect(await onServers(first.awaitedKey)).toBe(0);
        expect(await onServers(free.awaitedKey)).toBe(0);
        const published: string[] = [];
        const listener = new Redis(store.servers[0].url);
        try {
          listener.on('message', (channel: string) => published.push(channel));
          await listener.subscribe(first.channel, second.channel);
          expect(await lockStore.release([first, second], 'pair-holder|test')).toBe(true);
          await eventually(async () => published.length > 0, 2_000, 'the release announced');
          await sleep(100);
          expect(published).toEqual([second.channel]);
        } finally {
          listener.disconnect();
        }
      } finally {
        await lockStore.close();
      }
    });

    it('callers of one instance queued behind each other all get the lock, also past the local hand-over budget (every 4th release is announced)', async () => {
      const { locks } = await apps.start(store.options({ ttl: LONG_TTL_MS }));
      const key = uniqueKey('queue');
      const holder = await locks.acquire(key);
      const done: number[] = [];
      const queued = Array.from({ length: 8 }, (_, index) =>
        locks.withLock(key, () => sleep(5).then(() => done.push(index)), { wait: WAIT_MS }),
      );
      await sleep(300);
      await holder.release();
      // A caller that slept without an attempt of its own (queued behind the first) is woken by announcements
      // its own instance asks for: none of them sleeps toward its 10 s fallback, past the 7 s wait.
      await Promise.all(queued);
      expect(done).toHaveLength(8);
    });
  },
);
