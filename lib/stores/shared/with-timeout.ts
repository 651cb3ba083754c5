/** Raised by withTimeout; the store maps it to LockUnavailableError. */
export class CommandTimeoutError extends Error {
  constructor(readonly timeoutMs: number) {
    super(`no answer within ${timeoutMs} ms`);
    this.name = 'CommandTimeoutError';
  }
}

/**
 * Deadlines are grouped in buckets of this many ms, with one timer per bucket instead of one per command:
 * thousands of commands a second then cost a handful of timers.
 */
const BUCKET_MS = 16;

/** Something with a deadline: rejected with CommandTimeoutError when its bucket expires. */
export interface Expirable {
  reject(error: Error): void;
  readonly timeoutMs: number;
}

/** The longest delay setTimeout honours; Node fires a longer one after 1 ms (and warns). */
const MAX_TIMER_DELAY_MS = 2_147_483_647;

const buckets = new Map<number, Set<Expirable>>();

/** Arms the bucket's timer, in steps of the longest delay when its deadline is further away (a huge commandTimeout). */
function armBucket(at: number): void {
  setTimeout(expireBucket, Math.min(MAX_TIMER_DELAY_MS, Math.max(0, at - performance.now())), at).unref();
}

function expireBucket(at: number): void {
  // A step short of a far deadline (the timer fires a little early too: only a whole bucket counts).
  if (at - performance.now() > BUCKET_MS) {
    armBucket(at);
    return;
  }
  const bucket = buckets.get(at);
  buckets.delete(at);
  if (bucket) for (const pending of bucket) pending.reject(new CommandTimeoutError(pending.timeoutMs));
}

/**
 * Puts `expirable` in the bucket of its deadline, `timeoutMs` from now (up to BUCKET_MS later), and returns
 * that bucket: the caller deletes it from there once answered, or it is rejected when the bucket expires.
 */
export function expireAfter(expirable: Expirable): Set<Expirable> {
  const at = Math.ceil((performance.now() + expirable.timeoutMs) / BUCKET_MS) * BUCKET_MS;
  let bucket = buckets.get(at);
  if (!bucket) {
    bucket = new Set();
    buckets.set(at, bucket);
    armBucket(at);
  }
  bucket.add(expirable);
  return bucket;
}

/**
 * Rejects with CommandTimeoutError when `promise` has not settled within `timeoutMs` (up to BUCKET_MS
 * later). The command itself is not cancelled (Redis cannot be told to forget it): callers undo what a
 * late success would leave.
 */
export function withTimeout<T>(promise: Promise<T>, timeoutMs: number): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const pending: Expirable = { reject, timeoutMs };
    const bucket = expireAfter(pending);
    promise.then(
      (value) => {
        bucket.delete(pending);
        resolve(value);
      },
      (error: unknown) => {
        bucket.delete(pending);
        reject(error);
      },
    );
  });
}
