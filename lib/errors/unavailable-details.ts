/**
 * Details of a LockUnavailableError that say the module, not Redis, refused the call. Kept out of the errors'
 * index: they are the engine's words, not part of the public API.
 */

/** A call made once the application is shutting down. */
export const SHUTTING_DOWN = 'the application is shutting down';

/** A command asked of a store that was closed. */
export const STORE_CLOSED = 'the lock store is closed';

/** The in-process store cut off by a test (LockTesting.makeUnavailable), standing for Redis down. */
export const MADE_UNAVAILABLE = 'made unavailable by LockTesting.makeUnavailable()';
