import { formatKeys } from './format-keys';
import { LockError } from './lock.error';
import { unavailableAdvice } from './unavailable-advice';

/**
 * The lock store could not be reached, or too few Redlock nodes answered to form a quorum. Raised by
 * acquisitions (nothing was granted: a grant that may have been made is undone) and by release/extend.
 */
export class LockUnavailableError extends LockError {
  constructor(
    readonly keys: readonly string[],
    detail: string,
    options?: { cause?: unknown },
  ) {
    // Without keys (a health check's ping, a subscription): the store as such, not "for no keys".
    const which = keys.length > 0 ? ` for ${formatKeys(keys)}` : '';
    super(`Lock store unavailable${which}: ${detail}.${unavailableAdvice(String(detail), options?.cause)}`, options);
  }
}
