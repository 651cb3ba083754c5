/** Injection token of the resolved LockModuleOptions. */
export const LOCK_OPTIONS = 'LOCK:OPTIONS';
/** Injection token of the LockStore chosen from the options. */
export const LOCK_STORE = 'LOCK:STORE';
/** Metadata key under which @Locked records its key and options. */
export const LOCKED_METADATA = 'LOCK:LOCKED';
/** Marks a provider method that the explorer has already wrapped, so it is never wrapped twice. */
export const LOCKED_WRAPPED = 'LOCK:WRAPPED';

/** Longest lock name accepted (before the prefix), in UTF-16 code units. */
export const MAX_KEY_LENGTH = 1024;
