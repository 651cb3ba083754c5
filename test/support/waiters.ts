import type { LockService } from '../../lib';
import { LockKeyNamer } from '../../lib/keys';
import { eventually } from './eventually';

/** The default keyPrefix, which the suites that use waiterAsleep keep. */
const namer = new LockKeyNamer('lock:');

/**
 * Resolves once a single-key caller of `locks` sleeps waiting for `key`: its attempts refused, subscribed,
 * waiting for a release (the store's hasWaiters). Exact where a fixed sleep only hoped the waiter got there
 * first, which a stall of the loaded machine could undo.
 */
export function waiterAsleep(locks: LockService, key: string, ms = 5_000): Promise<void> {
  const names = [namer.names(key)];
  return eventually(async () => locks.store.hasWaiters(names), ms, `a waiter of "${key}" asleep`);
}
