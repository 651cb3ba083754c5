import { setTimeout as sleep } from 'node:timers/promises';
import { type Lock, LockLostError } from '../../lib';
import { trackLockApps, uniqueKey } from '../support/lock-app';
import { StoreUnderTest, storeRows } from '../support/store-matrix';
import { twoLockServices } from './helpers/contenders';

/** Short waits: a deadlocked inner acquisition fails the test in a second instead of hanging it. */
const INNER = { wait: 1000 };

describe.each(storeRows())('reentrancy and current() (%s store)', (_name, fixture) => {
  let store: StoreUnderTest;
  beforeAll(async () => {
    store = await fixture.setup();
  });
  afterAll(() => store?.teardown());
  const apps = trackLockApps();

  it('nested withLock on the same key runs at once; current() is the innermost lock, undefined outside', async () => {
    const [locks, other] = await twoLockServices(store, apps);
    const key = uniqueKey('nested');
    const seen: string[] = [];
    expect(locks.current()).toBeUndefined();

    await locks.withLock(key, async (outer) => {
      expect(locks.current()).toBe(outer);
      await locks.withLock(
        key,
        async (inner) => {
          expect(locks.current()).toBe(inner);
          await sleep(1);
          expect(locks.current()).toBe(inner);
          seen.push('inner');
        },
        INNER,
      );
      expect(locks.current()).toBe(outer);
      // The inner release left the outer lock in place.
      expect(await other.isLocked(key)).toBe(true);
      expect(await other.tryAcquire(key, { reentrant: false })).toBeNull();
      expect(outer.signal.aborted).toBe(false);
      seen.push('outer');
    });

    expect(seen).toEqual(['inner', 'outer']);
    expect(locks.current()).toBeUndefined();
    expect(await other.isLocked(key)).toBe(false);
  });

  it('an inner acquire + release inside withLock does not release the outer lock', async () => {
    const [locks, other] = await twoLockServices(store, apps);
    const key = uniqueKey('inner-release');
    await locks.withLock(key, async (outer) => {
      const inner = await locks.acquire(key, INNER);
      await inner.release();
      expect(await other.isLocked(key)).toBe(true);
      expect(await other.tryAcquire(key, { reentrant: false })).toBeNull();
      // The released inner handle no longer holds anything: extending through it is refused (before: it
      // renewed the outer lease), while the outer handle still extends.
      await expect(inner.extend()).rejects.toBeInstanceOf(LockLostError);
      await expect(outer.extend()).resolves.toBeUndefined();
      expect(locks.current()).toBe(outer);
    });
    expect(await other.isLocked(key)).toBe(false);
  });

  it('a nested lock on another key is current inside and gives way to the outer one after', async () => {
    const [locks] = await twoLockServices(store, apps);
    const [outerKey, innerKey] = [uniqueKey('outer'), uniqueKey('inner')];
    await locks.withLock(outerKey, async (outer) => {
      await locks.withLock(innerKey, async (inner) => {
        expect(locks.current()).toBe(inner);
        expect(inner.keys).toEqual([innerKey]);
      });
      expect(locks.current()).toBe(outer);
    });
  });

  it('concurrent contexts each see their own current lock', async () => {
    const [locks] = await twoLockServices(store, apps);
    const keys = [uniqueKey('ctx'), uniqueKey('ctx'), uniqueKey('ctx')];
    const seen = await Promise.all(
      keys.map((key) =>
        locks.withLock(key, async () => {
          await sleep(20);
          return (locks.current() as Lock).keys[0];
        }),
      ),
    );
    expect(seen).toEqual(keys);
  });

  it('without reentrancy, the same key inside its own withLock is busy (not a silent deadlock)', async () => {
    const [locks] = await twoLockServices(store, apps);
    const key = uniqueKey('not-reentrant');
    await locks.withLock(key, async () => {
      expect(await locks.tryAcquire(key, { reentrant: false })).toBeNull();
    });
  });
});
