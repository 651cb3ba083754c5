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

interface Pending {
  readonly reject: (error: Error) => void;
  readonly timeoutMs: number;
}

const buckets = new Map<number, Set<Pending>>();

function expireBucket(at: number): void {
  const bucket = buckets.get(at);
  buckets.delete(at);
  if (bucket) for (const pending of bucket) pending.reject(new CommandTimeoutError(pending.timeoutMs));
}

/**
 * Rejects with CommandTimeoutError when `promise` has not settled within `timeoutMs` (up to BUCKET_MS
 * later). The command itself is not cancelled (Redis cannot be told to forget it): callers undo what a
 * late success would leave.
 */
export function withTimeout<T>(promise: Promise<T>, timeoutMs: number): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const at = Math.ceil((performance.now() + timeoutMs) / BUCKET_MS) * BUCKET_MS;
    let bucket = buckets.get(at);
    if (!bucket) {
      bucket = new Set();
      buckets.set(at, bucket);
      setTimeout(expireBucket, Math.max(0, at - performance.now()), at).unref();
    }
    const pending: Pending = { reject, timeoutMs };
    const own = bucket;
    own.add(pending);
    promise.then(
      (value) => {
        own.delete(pending);
        resolve(value);
      },
      (error: unknown) => {
        own.delete(pending);
        reject(error);
      },
    );
  });
}
