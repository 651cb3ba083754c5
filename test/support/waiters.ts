import type Redis from 'ioredis';
import type { LockService } from '../../lib';
import { LockKeyNamer } from '../../lib/keys';
import { eventually } from './eventually';

/** The module's default keyPrefix. */
const DEFAULT_PREFIX = 'lock:';

/**
 * Resolves once a single-key caller of `locks` sleeps waiting for `key`: its attempts refused, subscribed,
 * waiting for a release (the store's hasWaiters). Exact where a fixed sleep only hoped the waiter got there
 * first, which a stall of the loaded machine could undo. On Redlock "subscribed" means on a quorum of the
 * nodes, not necessarily all: a test that announces on chosen nodes checks their PUBSUB NUMSUB itself.
 * `keyPrefix`: the module's, if it is not the default.
 */
export function waiterAsleep(locks: LockService, key: string, ms = 5_000, keyPrefix = DEFAULT_PREFIX): Promise<void> {
  const names = [new LockKeyNamer(keyPrefix).names(key)];
  return eventually(async () => locks.store.hasWaiters(names), ms, `a waiter of "${key}" asleep`);
}

/** How many connections listen on `channel` on the server `client` is connected to (PUBSUB NUMSUB). */
export async function subscribersOf(client: Redis, channel: string): Promise<number> {
  const [, count] = (await client.call('PUBSUB', 'NUMSUB', channel)) as [string, number];
  return Number(count);
}
