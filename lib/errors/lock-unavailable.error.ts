import { formatKeys } from './format-keys';
import { LockError } from './lock.error';

/** The lock store could not be reached, or too few Redlock nodes answered to form a quorum. */
export class LockUnavailableError extends LockError {
  constructor(
    readonly keys: readonly string[],
    detail: string,
    options?: { cause?: unknown },
  ) {
    super(
      `Lock store unavailable for ${formatKeys(keys)}: ${detail}. ` +
        `Check that Redis is reachable; nothing was locked.`,
      options,
    );
  }
}
