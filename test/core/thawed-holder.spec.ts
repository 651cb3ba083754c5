import { LockLostError } from '../../lib';
import { trackLockApps, uniqueKey } from '../support/lock-app';
import { StoreUnderTest, storeRows, storesUnderTest } from '../support/store-matrix';

/**
 * A holder that runs again after its lease's validity ended (a pause: SIGSTOP, a stopped VM, a blocked event
 * loop) reads its lock lost on the first read, before the scheduler's timer has had a turn: `signal.aborted`,
 * `signal.reason`, `signal.throwIfAborted()` and `isHeld` all check the validity deadline themselves.
 */

const TTL_MS = 200;

/** Blocks the event loop, as a pause does for the process's own code: no timer or I/O callback runs. */
function blockEventLoop(ms: number): void {
  const until = performance.now() + ms;
  while (performance.now() < until) {
    // Spinning on purpose.
  }
}

// Redlock over 3 nodes stands for Redlock: the deadline is the lease's, whatever the node count.
describe.each(storeRows(storesUnderTest().filter((store) => store.name !== 'redlock5')))(
  'a thawed holder (%s store)',
  (_name, fixture) => {
    let store: StoreUnderTest;
    beforeAll(async () => {
      store = await fixture.setup();
    });
    afterAll(() => store?.teardown());
    const apps = trackLockApps();

    it('reads its signal aborted, with a LockLostError, on the first read after its validity ended', async () => {
      const { locks } = await apps.start(store.options());
      const lock = await locks.acquire(uniqueKey('thawed'), { ttl: TTL_MS });
      expect(lock.signal.aborted).toBe(false);
      blockEventLoop(TTL_MS * 2);
      // Synchronously after the pause: no timer has run yet.
      expect(lock.signal.aborted).toBe(true);
      expect(lock.signal.reason).toBeInstanceOf(LockLostError);
      expect(() => lock.signal.throwIfAborted()).toThrow(LockLostError);
      expect(await lock.release()).toBe(false);
    });

    it('a signal first read after the pause, and isHeld, show the loss too', async () => {
      const { locks } = await apps.start(store.options());
      const lock = await locks.acquire(uniqueKey('thawed-unread'), { ttl: TTL_MS });
      blockEventLoop(TTL_MS * 2);
      expect(lock.signal.aborted).toBe(true);
      const other = await locks.acquire(uniqueKey('thawed-held'), { ttl: TTL_MS });
      blockEventLoop(TTL_MS * 2);
      expect(locks.current()).toBeUndefined();
      expect((other as unknown as { isHeld: boolean }).isHeld).toBe(false);
      expect(other.signal.reason).toBeInstanceOf(LockLostError);
    });

    it('a handle over a borrowed lease (reentrancy) reads the outer lease lost as well', async () => {
      const { locks } = await apps.start(store.options());
      const outer = uniqueKey('thawed-outer');
      await locks
        .withLock(
          outer,
          async () => {
            const inner = await locks.acquire([outer, uniqueKey('thawed-inner')], { ttl: TTL_MS });
            expect(inner.signal.aborted).toBe(false);
            blockEventLoop(TTL_MS * 2);
            expect(inner.signal.aborted).toBe(true);
            expect(inner.signal.reason).toBeInstanceOf(LockLostError);
            await inner.release();
          },
          { ttl: TTL_MS },
        )
        .catch((error: unknown) => {
          if (!(error instanceof LockLostError)) throw error;
        });
    });

    it('a holder whose lease is renewed in time reads it held, however long it holds', async () => {
      const { locks } = await apps.start(store.options());
      const lock = await locks.acquire(uniqueKey('renewed'), { ttl: TTL_MS });
      const until = performance.now() + TTL_MS * 2.5;
      while (performance.now() < until) {
        expect(lock.signal.aborted).toBe(false);
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      expect(await lock.release()).toBe(true);
    });
  },
);
