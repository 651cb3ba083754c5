// LockNotAcquiredError, a busy key: still held by someone else when the `wait` budget ran out; and its message.
import { formatKeys } from './format-keys';
import { LockError } from './lock.error';

/** What a busy call asked for, as far as its message needs it. */
export interface LockNotAcquiredDetails {
  /** The `wait` budget of the call, in ms, when the thrower knew it (`0`: a single attempt). */
  readonly wait?: number;
  /**
   * The `limit` of a semaphore call. Above 1 the message says that every permit is taken; a semaphore of one
   * reads like a mutex ("held by another owner").
   */
  readonly limit?: number;
  /**
   * `'read'` for a reader, which only a writer (holding the key, or first in line for it) turns away; absent for a
   * writer.
   */
  readonly mode?: 'read';
  /**
   * `'readers'` for a writer that readers (of a read-write lock) turned away; absent when a writer holds the key, or
   * unknown.
   */
  readonly heldBy?: 'readers';
}

/** The keys were still held by someone else when the `wait` budget ran out. */
export class LockNotAcquiredError extends LockError {
  /**
   * The `wait` budget of the call, in ms, when the thrower knew it (`0`: a single attempt). It decides
   * the message: a one-attempt call was never "waiting", however long its round trip took.
   */
  readonly wait: number | undefined;
  /** How long this call spent trying, in ms (to 0.1 ms: a finer figure is the clock's noise in a log line). */
  readonly waitedMs: number;
  /**
   * @internal The message's first sentence, what happened, without the advice to the developer about the
   * 'wait' option: a client cannot set it (what it is told begins with this), and a skip was intended.
   */
  readonly summary: string;

  constructor(
    readonly keys: readonly string[],
    /**
     * When a retry may succeed, in ms (0 when unknown): from LockService, the time left on the holder's
     * lease as last seen; from @Locked, an estimate from how long holds of the key have lasted recently,
     * never beyond that lease (see retry-after.estimator.ts).
     */
    readonly retryAfterMs: number,
    waitedMs: number,
    readonly details: LockNotAcquiredDetails = {},
  ) {
    const [what, advice] = busyMessage(keys, waitedMs, details);
    // The client is told what happened, without the advice about the 'wait' option: it cannot set it.
    super(`${what} ${advice}`, undefined, {
      code: 'LOCK_BUSY',
      message: `${what} Retry later.`,
      keys: [...keys],
      retryAfterMs,
    });
    this.summary = what;
    this.wait = details.wait;
    this.waitedMs = Math.round(waitedMs * 10) / 10;
  }
}

/**
 * The message says who holds the keys in the words of what was asked: a mutex (or a writer) finds another
 * owner, or readers when they turned a writer away; a semaphore call finds all its permits taken, a reader
 * finds a writer. A one-attempt call says
 * so plainly; a call that waited says for how long. Returned as [what happened, advice to the developer].
 */
function busyMessage(keys: readonly string[], waitedMs: number, details: LockNotAcquiredDetails): [string, string] {
  const what = `Lock on ${formatKeys(keys)} not acquired${details.mode === 'read' ? ' for reading' : ''}`;
  const permits = details.limit !== undefined && details.limit > 1 ? `all ${details.limit} permits` : undefined;
  // [one attempt, after waiting]
  const [now, still] = permits
    ? [`${permits} are taken`, `${permits} were still taken`]
    : details.mode === 'read'
      ? ['held or claimed by a writer', 'still held or claimed by a writer']
      : details.heldBy === 'readers'
        ? ['held by readers', 'still held by readers']
        : ['held by another owner', 'still held by another owner'];
  return details.wait === 0
    ? [`${what}: ${now}.`, "Retry later, or set the 'wait' option to queue for it."]
    : [
        `${what}: ${still} after waiting ${Math.round(details.wait ?? waitedMs)} ms.`,
        "Retry later or raise the 'wait' option.",
      ];
}
