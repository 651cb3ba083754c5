// LockLostError: a lease ended while its holder still relied on it.
import { formatKeys } from './format-keys';
import { LockError } from './lock.error';

/** The lease ended (expired, deleted, or not renewed in time) while the holder still relied on it. */
export class LockLostError extends LockError {
  constructor(
    readonly keys: readonly string[],
    reason: string,
    options?: { cause?: unknown },
  ) {
    super(
      `Lock on ${formatKeys(keys)} is lost: ${reason}. ` +
        `Stop work guarded by it; writes should carry its fencing token.`,
      options,
      // The reason is for the operator's log; the client is told that its request ran without its lock.
      { code: 'LOCK_LOST', message: `The lock on ${formatKeys(keys)} was lost while the request ran.` },
    );
  }
}
