import { LockOptionsError } from '../../lib';
import { trackLockApps, uniqueKey } from '../support/lock-app';
import { StoreUnderTest, storeRows } from '../support/store-matrix';
import { twoLockServices } from './helpers/contenders';
import { rejectionOf } from './helpers/timing';

describe.each(storeRows())('withLock outcome (%s store)', (_name, fixture) => {
  let store: StoreUnderTest;
  beforeAll(async () => {
    store = await fixture.setup();
  });
  afterAll(() => store?.teardown());
  const apps = trackLockApps();

  it("returns fn's value unchanged (async and sync fn) and releases", async () => {
    const [locks, other] = await twoLockServices(store, apps);
    const key = uniqueKey('value');
    const value = { answer: 42 };
    expect(await locks.withLock(key, async () => value)).toBe(value);
    expect(await locks.withLock(key, () => value)).toBe(value);
    expect(await other.isLocked(key)).toBe(false);
  });

  it("takes the keys as a read-only array too (a lock's own keys, an event's)", async () => {
    const [locks, other] = await twoLockServices(store, apps);
    const first = await locks.acquire([uniqueKey('readonly-a'), uniqueKey('readonly-b')]);
    const keys: readonly string[] = first.keys;
    await first.release();
    expect(await locks.withLock(keys, async () => other.isLocked(keys[1]))).toBe(true);
    const again = await locks.tryAcquire(keys);
    expect(again?.keys).toEqual(keys);
    await again?.release();
  });

  it('await using releases at the end of the block, whether it returns or throws (the error unchanged)', async () => {
    const [locks, other] = await twoLockServices(store, apps);
    const key = uniqueKey('using');
    const fence = await (async () => {
      await using lock = await locks.acquire(key);
      expect(await other.isLocked(key)).toBe(true);
      return lock.fence;
    })();
    expect(await other.isLocked(key)).toBe(false);

    const blockError = new Error('the block failed');
    const thrown = await rejectionOf(
      (async () => {
        await using lock = await locks.acquire(key);
        expect(lock.fence).toBeGreaterThan(fence);
        throw blockError;
      })(),
    );
    expect(thrown).toBe(blockError);
    expect(await other.isLocked(key)).toBe(false);

    // Released early in the block (release() is idempotent): the end of the block neither releases again nor warns.
    const warnings = vi.spyOn(locks.logger, 'warn');
    try {
      await (async () => {
        await using lock = await locks.acquire(key);
        expect(await lock.release()).toBe(true);
      })();
      expect(warnings).not.toHaveBeenCalled();
    } finally {
      warnings.mockRestore();
    }
  });

  it('a fn that is not a function is a LockOptionsError before anything is locked (no acquired event)', async () => {
    const [locks] = await twoLockServices(store, apps);
    const key = uniqueKey('no-fn');
    const seen: string[] = [];
    const subscription = locks.events.subscribe((event) => seen.push(event.type));
    try {
      const error = await rejectionOf(locks.withLock(key, undefined as unknown as () => void));
      expect(error).toBeInstanceOf(LockOptionsError);
      expect((error as Error).message).toBe(
        "Invalid lock option 'fn': undefined. Expected a function to run while holding the lock.",
      );
      expect(await rejectionOf(locks.withLock(key, {} as unknown as () => void))).toMatchObject({
        option: 'fn',
        message: expect.stringContaining('an object'),
      });
      expect(seen).toEqual([]);
      expect(await locks.isLocked(key)).toBe(false);
    } finally {
      subscription.unsubscribe();
    }
  });

  it('hands fn the held lock', async () => {
    const [locks, other] = await twoLockServices(store, apps);
    const key = uniqueKey('handed');
    const seen = await locks.withLock(key, async (lock) => {
      expect(await other.isLocked(key)).toBe(true);
      return { keys: lock.keys, aborted: lock.signal.aborted };
    });
    expect(seen).toEqual({ keys: [key], aborted: false });
  });

  it("rethrows fn's error as the same object, and releases", async () => {
    const [locks, other] = await twoLockServices(store, apps);
    const key = uniqueKey('error');
    const failure = new TypeError('business rule broken');
    expect(await rejectionOf(locks.withLock(key, async () => Promise.reject(failure)))).toBe(failure);
    expect(
      await rejectionOf(
        locks.withLock(key, () => {
          throw failure;
        }),
      ),
    ).toBe(failure);
    // Non-Error throwables pass through unchanged too.
    const odd = { code: 'E_ODD' };
    // eslint-disable-next-line @typescript-eslint/prefer-promise-reject-errors -- a non-Error on purpose
    expect(await rejectionOf(locks.withLock(key, async () => Promise.reject(odd)))).toBe(odd);
    expect(await other.isLocked(key)).toBe(false);
    const next = await other.tryAcquire(key);
    expect(next).not.toBeNull();
    await next?.release();
  });
});
