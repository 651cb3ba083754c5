import 'reflect-metadata';
import { LockService } from './lock.service';
import { resolveLockOptions } from './options/module-options.resolver';
import type { AcquireOutcome, LockStore, ReleaseWatch } from './stores/lock-store.interface';

/**
 * LockService's shutdown against a scripted store: what it sends, in which order, around close(). (The stores
 * themselves are tested against real servers; here the store only records the service's calls.)
 */
describe('LockService shutdown with a writer queued behind readers', () => {
  it(
    'withdraws the writer once, announced, ' + 'before closing the store, also when the writer wakes meanwhile',
    async () => {
      const log: string[] = [];
      let wake: (value: undefined) => void = () => undefined;
      const woken = new Promise<undefined>((resolve) => (wake = resolve));
      const watch = {
        seen: 0,
        releasedSince: () => false,
        ready: () => Promise.resolve(),
        next: () => woken,
        close: () => undefined,
      } as unknown as ReleaseWatch;
      let withdrawals = 0;
      const store = {
        kind: 'redis',
        hasWaiters: () => false,
        wakeWaiters: () => undefined,
        // Readers hold the key: every attempt queues the writer (its intent is recorded on the key).
        acquire: async (): Promise<AcquireOutcome> => ({ acquired: false, retryAfter: 60_000, queued: true }),
        watch: () => watch,
        withdraw: (_key: unknown, _token: string, announce: boolean) => {
          const withdrawal = ++withdrawals;
          log.push(`withdraw ${withdrawal} (announce ${announce})`);
          return new Promise<void>((resolve) => setTimeout(resolve, 20));
        },
        release: async () => true,
        close: async () => {
          log.push('close');
        },
      } as unknown as LockStore;
      const locks = new LockService(resolveLockOptions({ ttl: 10_000 }), store);
      const writer = locks.acquire('k', { wait: 60_000, mode: 'write' }).then(
        () => 'granted',
        (error: Error) => error.name,
      );
      await new Promise((resolve) => setTimeout(resolve, 20));
      const shutdown = locks.onApplicationShutdown();
      // The writer wakes while shutdown runs: it must not withdraw (and announce) a second time.
      wake(undefined);
      await shutdown;
      expect(await writer).toBe('LockUnavailableError');
      expect(log).toEqual(['withdraw 1 (announce true)', 'close']);
    },
  );
});
