// How a node's failures reach the stores: the caller's mistakes as lock errors, the rest as the driver's error.
import { InvalidLockKeyError } from '../../errors';
import type { LockKeyNames } from '../lock-store.interface';

/** Data at a lock's key or fence key that is not this library's: the caller's to fix (key, or keyPrefix). */
export function foreignData(key: LockKeyNames, which: 'lock' | 'fence'): InvalidLockKeyError {
  return new InvalidLockKeyError(
    key.name,
    `Redis key ${JSON.stringify(which === 'lock' ? key.lockKey : key.fenceKey)} ` +
      `holds data that is not this library's; ` +
      `choose another key or keyPrefix`,
  );
}

/**
 * A failed script's error: keys in different Cluster slots, or a key holding another type, are the caller's
 * mistake (InvalidLockKeyError); anything else is the store's, rethrown as the driver gave it.
 */
export function scriptError(error: unknown, keys: readonly LockKeyNames[]): never {
  const message = error instanceof Error ? error.message : String(error);
  if (message.startsWith('CROSSSLOT') || message.includes('cross slot') || message.includes('same slot')) {
    throw new InvalidLockKeyError(
      keys.map((key) => key.name),
      'on Redis Cluster the keys of one multi-key lock must share a hash slot; ' +
        'give them a common hash tag, e.g. "{account}:1" and "{account}:2"',
    );
  }
  if (message.startsWith('WRONGTYPE')) {
    throw new InvalidLockKeyError(keys[0].name, "a Redis key of this lock holds data that is not this library's");
  }
  throw error;
}
