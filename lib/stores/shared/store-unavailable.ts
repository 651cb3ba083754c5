// The LockUnavailableError both Redis stores raise when an operation fails on Redis.
import { LockUnavailableError } from '../../errors';
import type { LockKeyNames } from '../lock-store.interface';

/**
 * `<operation> failed on <where>` for the keys' names, e.g. `acquire failed on Redis (connect ECONNREFUSED …)`
 * or `acquire failed on Redlock: only 1 of 3 Redlock nodes answered…`, with the failure as its cause.
 */
export function storeUnavailable(
  keys: readonly LockKeyNames[],
  operation: string,
  where: string,
  cause?: { readonly cause: unknown },
): LockUnavailableError {
  return new LockUnavailableError(
    keys.map((key) => key.name),
    `${operation} failed on ${where}`,
    cause,
  );
}
