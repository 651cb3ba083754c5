// The in-process store LockTesting drives, or the error that refuses a module configured with Redis.
import { LockOptionsError } from '../errors';
import type { ResolvedLockOptions } from '../options/lock-options.interface';
import type { LockStore } from '../stores/lock-store.interface';
import { MemoryLockStore } from '../stores/memory/memory-lock.store';

/**
 * The in-process store LockTesting drives, or the LockOptionsError that refuses a module configured with Redis:
 * a test must never make keys busy, locks lost or a store unavailable on a Redis that may be production's.
 */
export function inProcessStore(store: LockStore, options: ResolvedLockOptions, call: string): MemoryLockStore {
  if (store instanceof MemoryLockStore) return store;
  const option = options.nodes !== undefined ? 'nodes' : 'redis';
  throw new LockOptionsError(
    option,
    options[option],
    `neither 'redis' nor 'nodes' in an application that uses LockTesting (${call}): it drives the in-process store ` +
      'only, never a real Redis. In the test, configure LockModule without them: LockModule.forRoot() with no ' +
      "'redis' or 'nodes', or a forRootAsync factory that returns neither (e.g. from the test's own configuration)",
  );
}
