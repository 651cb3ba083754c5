// The lock keys of leaderships (`leader:<name>`), a namespace where a plain lock is refused.
import { InvalidLockKeyError } from '../errors';

/**
 * The lock keys of leaderships: `leader:<name>`. The namespace is reserved where a lock is taken (acquire,
 * tryAcquire, withLock, @Locked): only a campaign takes a key in it, so a plain lock can never hold a
 * leadership's key, and a key in it that is held is always a leadership (`inspect` reports kind 'leader').
 * The operator's tools (inspect, isLocked, forceRelease) and LockTesting.holdElsewhere read and clear it.
 */
export const LEADER_KEY_PREFIX = 'leader:';

/** The lock key of leadership `name`. */
export function leaderKey(name: string): string {
  return `${LEADER_KEY_PREFIX}${name}`;
}

/** Whether `key` is a leadership's key. */
export function isLeaderKey(key: string): boolean {
  return key.startsWith(LEADER_KEY_PREFIX);
}

/** InvalidLockKeyError when a key a caller wants to lock is in the leaderships' namespace. */
export function refuseLeaderKeys(keys: readonly string[]): void {
  for (const key of keys) {
    if (isLeaderKey(key)) {
      throw new InvalidLockKeyError(
        key,
        `keys starting with "${LEADER_KEY_PREFIX}" belong to leaderships (LockService.lead, @Leader) and cannot be ` +
          'locked: use another prefix for a plain lock',
      );
    }
  }
}
