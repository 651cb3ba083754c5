import { LockUnavailableError } from '../../errors';
import { LockKeyNamer } from '../../keys';
import { MemoryLockStore, type MemoryStoreOutage } from './memory-lock.store';

const namer = new LockKeyNamer('lock:');
const key = namer.names('k');
/** Lease values of this process and of another instance (`<token>|<instance>`). */
const ours = 'aa|app';
const theirs = 'bb|elsewhere';

const outage: MemoryStoreOutage = { detail: 'cut off for the test', reaches: (value) => value.endsWith('|elsewhere') };

describe('MemoryLockStore with access cut off (the outage LockTesting.makeUnavailable sets)', () => {
  let store: MemoryLockStore;
  beforeEach(() => {
    store = new MemoryLockStore();
  });
  afterEach(async () => {
    await store.close();
  });

  it(
    'rejects every call of this process with LockUnavailableError ' + 'naming the key, and answers again once lifted',
    async () => {
      expect(await store.acquire({ keys: [key], token: ours, ttl: 10_000 })).toMatchObject({ acquired: true });
      store.setOutage(outage);
      expect(store.cutOff).toBe(true);
      const calls: [string, Promise<unknown>][] = [
        ['acquire', store.acquire({ keys: [namer.names('other')], token: 'cc|app', ttl: 10_000 })],
        ['extend', store.extend({ keys: [key], token: ours, ttl: 10_000 })],
        ['release', store.release([key], ours)],
        ['withdraw', store.withdraw(key, ours, true)],
        ['isLocked', store.isLocked(key)],
        ['inspect', store.inspect(key)],
        ['forceRelease', store.forceRelease(key)],
        ['ping', store.ping()],
      ];
      for (const [call, promise] of calls) {
        const error = await promise.then(
          () => undefined,
          (rejection: unknown) => rejection,
        );
        expect([call, error]).toEqual([call, expect.any(LockUnavailableError)]);
        expect((error as Error).message).toMatch(/cut off for the test/);
      }
      expect(await store.health()).toEqual({ up: false, message: expect.stringContaining('cut off for the test') });

      store.setOutage(undefined);
      expect(store.cutOff).toBe(false);
      // Nothing was changed by the refused calls: the lease is still ours.
      expect(await store.isLocked(key)).toBe(true);
      expect(await store.release([key], ours)).toBe(true);
      expect(await store.health()).toEqual({ up: true });
    },
  );

  it('lets the values the outage reaches through: another instance grants, renews and releases meanwhile', async () => {
    store.setOutage(outage);
    expect(await store.acquire({ keys: [key], token: theirs, ttl: 10_000 })).toMatchObject({ acquired: true });
    expect(await store.extend({ keys: [key], token: theirs, ttl: 10_000 })).toEqual(expect.any(Number));
    expect(await store.release([key], theirs)).toBe(true);
  });

  it('refuses to subscribe to release announcements while cut off', async () => {
    store.setOutage(outage);
    const watch = store.watch([key]);
    await expect(watch.ready()).rejects.toBeInstanceOf(LockUnavailableError);
    watch.close();
    store.setOutage(undefined);
    const again = store.watch([key]);
    await expect(again.ready()).resolves.toBeUndefined();
    again.close();
  });

  it('lets leases expire during the outage, as Redis does', async () => {
    expect(await store.acquire({ keys: [key], token: ours, ttl: 30 })).toMatchObject({ acquired: true });
    store.setOutage(outage);
    await new Promise((resolve) => setTimeout(resolve, 60));
    store.setOutage(undefined);
    expect(await store.isLocked(key)).toBe(false);
  });
});
