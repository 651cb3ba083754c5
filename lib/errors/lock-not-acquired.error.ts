import { formatKeys } from './format-keys';
import { LockError } from './lock.error';

/** The keys were still held by someone else when the `wait` budget ran out. */
export class LockNotAcquiredError extends LockError {
  constructor(
    readonly keys: readonly string[],
    /** Milliseconds until the current holder's lease ends, as last seen (0 when unknown). */
    readonly retryAfterMs: number,
    waitedMs: number,
  ) {
    super(
      `Lock on ${formatKeys(keys)} not acquired: still held by another owner after waiting ${Math.round(waitedMs)} ms. ` +
        `Retry later or raise the 'wait' option.`,
    );
  }
}
