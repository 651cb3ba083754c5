/** Injection token of the resolved LockModuleOptions. */
export const LOCK_OPTIONS = 'LOCK:OPTIONS';
/** Injection token of the LockStore chosen from the options. */
export const LOCK_STORE = 'LOCK:STORE';
/** Metadata key under which @Locked records its key and options. */
export const LOCKED_METADATA = 'LOCK:LOCKED';
/** Marks a provider method that the explorer has already wrapped, so it is never wrapped twice. */
export const LOCKED_WRAPPED = 'LOCK:WRAPPED';

/**
 * Shortest ttl (and maxHold) accepted, in ms. A lease is known valid for ttl minus the clock-drift
 * allowance (ttl × driftFactor + 2 ms) minus the round trip that granted it: a ttl of a few ms leaves
 * nothing, and every attempt on Redis would end in LockUnavailableError.
 */
export const MIN_TTL_MS = 10;

/** Longest lock name accepted (before the prefix), in UTF-16 code units. */
export const MAX_KEY_LENGTH = 1024;
