// LockUnavailableError: the store could not be reached, or too few Redlock nodes answered for a quorum.
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
    // The store's own words (a host and port, a driver's error, node counts) are for the operator's log, not
    // for a client: it is told of the outage in general terms.
    super(`Lock store unavailable${which}: ${detail}.${unavailableAdvice(String(detail), options?.cause)}`, options, {
      code: 'LOCK_UNAVAILABLE',
      message: `Lock store unavailable${which}; try again later.`,
    });
  }
}
