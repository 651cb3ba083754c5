// The error of a command asked of a Redis store's node after close(); internal, reported as LockUnavailableError.
import { STORE_CLOSED } from './unavailable-details';

/**
 * A command asked of a Redis store's node after close(). Internal to the Redis stores, which report it as
 * LockUnavailableError; not exported from the errors' index.
 */
export class StoreClosedError extends Error {
  constructor() {
    super(`${STORE_CLOSED} (the application is shutting down)`);
    this.name = 'StoreClosedError';
  }
}
