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
  },
  storesUnderTest(['memory', 'redis', 'redlock3']),
);
