import { LockKeyNamer } from '../../lib/keys';
import type { AcquireOutcome, AcquireRequest } from '../../lib/stores/lock-store.interface';
import { eventually } from '../support/eventually';
import { connected, trackLockApps, uniqueKey } from '../support/lock-app';
import { describeEachStore, type StoreUnderTest, storesUnderTest } from '../support/store-matrix';
import { waiterAsleep } from '../support/waiters';

/** The writer's ttl: a writer that no release wakes attempts again only after a third of it (renewing its mark). */
const WRITER_TTL_MS = 9_000;
/** Well below WRITER_TTL_MS / 3: woken by the last reader's release, not by its own timer. */
const IN_WITHIN_MS = 1_500;

/**
 * A writer queued behind readers, with a reader queued behind its mark, all in one process. The first reader's
 * release wakes the writer; the second's, made while the writer's attempt is still on its way, wakes the reader,
 * whom the writer's mark turns away. The writer, refused by the second reader's lease, attempts again for that
 * release at once: a queued writer takes any release counted during its attempt, whoever it woke.
 */
describeEachStore(
  'a queued writer behind readers of its own process (%s store)',
  (_name, fixture) => {
    let store: StoreUnderTest;
    beforeAll(async () => {
      store = await fixture.setup();
    });
    afterAll(() => store?.teardown());
    const apps = trackLockApps();

    it('the readers let go one right after the other: the writer gets in at once, not at its next timer', async () => {
      const locks = await connected((await apps.start(store.options())).locks);
      const key = uniqueKey('writer-behind-readers');
      const first = await locks.acquire(key, { mode: 'read', ttl: 30_000 });
      const second = await locks.acquire(key, { mode: 'read', ttl: 30_000 });
      const writer = locks.acquire(key, { ttl: WRITER_TTL_MS, wait: 20_000 });
      await waiterAsleep(locks, key);
      const reader = locks.acquire(key, { mode: 'read', ttl: WRITER_TTL_MS, wait: 20_000 });
      reader.catch(() => undefined);
      await new Promise((resolve) => setTimeout(resolve, 100));
      await first.release(); // wakes the writer: its attempt follows the release
      const freedAt = performance.now();
      await second.release();
      const lock = await writer;
      const after = performance.now() - freedAt;
      await lock.release();
      await (await reader).release();
      expect(after, `the writer got in ${Math.round(after)} ms after the last reader let go`).toBeLessThan(
        IN_WITHIN_MS,
      );
    });

    it('a queued writer refused by another writer, whose release wakes a reader the mark turns away, gets in at once', async () => {
      const locks = await connected((await apps.start(store.options())).locks);
      const key = uniqueKey('writer-behind-writer');
      const names = new LockKeyNamer('lock:').names(key);
      const read = { kind: 'read' } as const;
      const lockStore = locks.store;
      const acquire = lockStore.acquire.bind(lockStore);
      const release = lockStore.release.bind(lockStore);
      expect((await acquire({ keys: [names], token: 'reader', ttl: 60_000, shape: read })).acquired).toBe(true);
      const writer = locks.acquire(key, { ttl: WRITER_TTL_MS, wait: 20_000 });
      await waiterAsleep(locks, key);
      const reader = locks.acquire(key, { mode: 'read', ttl: WRITER_TTL_MS, wait: 20_000 });
      reader.catch(() => undefined);
      await new Promise((resolve) => setTimeout(resolve, 100)); // the reader asleep behind the writer's mark
      // The writer's next answer is held back: its attempt is still "in flight" while the other writer lets go.
      let heldBack: AcquireOutcome | undefined;
      let letThrough!: () => void;
      const gate = new Promise<void>((resolve) => (letThrough = resolve));
      lockStore.acquire = async (request: AcquireRequest): Promise<AcquireOutcome> => {
        const outcome = await acquire(request);
        if (heldBack !== undefined) return outcome;
        heldBack = outcome;
        await gate;
        return outcome;
      };
      // The reader lets go (wakes the writer), and another writer takes the key before the writer's attempt.
      const released = release([names], 'reader', 0, read);
      const other = acquire({ keys: [names], token: 'other-writer', ttl: 60_000 });
      await released;
      expect((await other).acquired).toBe(true);
      await eventually(async () => heldBack !== undefined, 5_000, 'the writer refused by the other writer');
      expect(heldBack?.acquired).toBe(false);
      const freedAt = performance.now();
      await release([names], 'other-writer', 0); // wakes the reader asleep, whom the writer's mark refuses
      await new Promise((resolve) => setTimeout(resolve, 50));
      letThrough();
      const lock = await writer;
      const after = performance.now() - freedAt;
      lockStore.acquire = acquire;
      await lock.release();
      await (await reader).release();
      expect(after, `the writer got in ${Math.round(after)} ms after the other writer let go`).toBeLessThan(
        IN_WITHIN_MS,
      );
    });
  },
  storesUnderTest(['memory', 'redis', 'redlock3']),
);
