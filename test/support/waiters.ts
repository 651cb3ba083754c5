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
 * `keyPrefix`: the module's, if it is not the default. `orSettled`: the waiter's own acquisition, for a test
 * whose holder's lease ends by itself: a stall longer than that lease lets the waiter through before it was
 * ever seen asleep, which also satisfies the barrier.
 */
export async function waiterAsleep(
  locks: LockService,
  key: string,
  options: { ms?: number; keyPrefix?: string; orSettled?: Promise<unknown> } = {},
): Promise<void> {
  const names = [new LockKeyNamer(options.keyPrefix ?? DEFAULT_PREFIX).names(key)];
  let settled = false;
  options.orSettled?.then(
    () => (settled = true),
    () => (settled = true),
  );
  const what = options.orSettled ? `a waiter of "${key}" asleep or through` : `a waiter of "${key}" asleep`;
  await eventually(async () => settled || locks.store.hasWaiters(names), options.ms ?? 5_000, what);
}

/** How many connections listen on `channel` on the server `client` is connected to (PUBSUB NUMSUB). */
export async function subscribersOf(client: Redis, channel: string): Promise<number> {
  const [, count] = (await client.call('PUBSUB', 'NUMSUB', channel)) as [string, number];
  return Number(count);
}
