import { formatKeys } from './format-keys';
import { LockError } from './lock.error';

/** The keys were still held by someone else when the `wait` budget ran out. */
export class LockNotAcquiredError extends LockError {
  /**
   * The `wait` budget of the call, in ms, when the thrower knew it (`0`: a single attempt). It decides
   * the message: a one-attempt call was never "waiting", however long its round trip took.
   */
  readonly wait: number | undefined;

  constructor(
    readonly keys: readonly string[],
    /**
     * When a retry may succeed, in ms (0 when unknown): from LockService, the time left on the holder's
     * lease as last seen; from @Locked, an estimate from how long holds of the key have lasted recently,
     * never beyond that lease (see retry-after.estimator.ts).
     */
    readonly retryAfterMs: number,
    /** How long this call spent trying, in ms. */
    readonly waitedMs: number,
    details: { readonly wait?: number } = {},
  ) {
    super(
      details.wait === 0
        ? `Lock on ${formatKeys(keys)} not acquired: held by another owner. ` +
            `Retry later, or set the 'wait' option to queue for it.`
        : `Lock on ${formatKeys(keys)} not acquired: still held by another owner after waiting ` +
            `${Math.round(details.wait ?? waitedMs)} ms. Retry later or raise the 'wait' option.`,
    );
    this.wait = details.wait;
  }
}
