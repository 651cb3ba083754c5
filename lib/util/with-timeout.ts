// Command deadlines: one timer per 16 ms bucket of deadlines, not one per command.
import { CommandTimeoutError } from '../errors/command-timeout.error';
import { MAX_TIMER_DELAY_MS } from './timers';

/**
 * Deadlines are grouped in buckets of this many ms, with one timer per bucket instead of one per command:
 * thousands of commands a second then cost a handful of timers.
 */
const BUCKET_MS = 16;

/** Something with a deadline: rejected with CommandTimeoutError when its bucket expires. */
export interface Expirable {
  reject(error: Error): void;
  readonly timeoutMs: number;
  /** Where its bucket keeps it: set by DeadlineBucket.add, read by cancel. */
  deadlineSlot?: number;
}

/**
 * The commands whose deadlines fall in one BUCKET_MS window. Each is added once (every sender arms one
 * deadline per command it sends) and kept in a slot of its own: an answered one is cleared from its slot, with
 * no hashing, and once every slot is cleared the next command starts again at the first, so the slots are
 * bounded by how many commands of the window are unanswered at once, not by how many were sent in it. A Set per
 * bucket would rehash its tables as it filled and emptied, garbage on every command (see docs/performance.md).
 */
export class DeadlineBucket {
  private readonly pending: (Expirable | undefined)[] = [];
  /** Slots in use since the bucket was last empty. */
  private size = 0;
  /** Expirables not yet cancelled. */
  private live = 0;

  /** Keeps `expirable` until it is cancelled or the bucket expires. */
  add(expirable: Expirable): void {
    const slot = this.size++;
    this.pending[slot] = expirable;
    expirable.deadlineSlot = slot;
    this.live++;
  }

  /**
   * `expirable` was answered: it is no longer rejected when the bucket expires, nor kept alive by it. Only
   * the slot that still holds this very expirable is cleared (a cancel that comes after the bucket expired, or
   * of one another bucket holds, changes nothing).
   */
  cancel(expirable: Expirable): void {
    const slot = expirable.deadlineSlot;
    if (slot === undefined || this.pending[slot] !== expirable) return;
    this.pending[slot] = undefined;
    if (--this.live === 0) this.size = 0;
  }

  /** Rejects every expirable still pending, each slot cleared first, and keeps none. */
  expire(): void {
    const size = this.size;
    this.size = 0;
    this.live = 0;
    for (let slot = 0; slot < size; slot++) {
      const pending = this.pending[slot];
      this.pending[slot] = undefined;
      pending?.reject(new CommandTimeoutError(pending.timeoutMs));
    }
    this.pending.length = 0;
  }
}

const buckets = new Map<number, DeadlineBucket>();

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
  bucket?.expire();
}

/**
 * Puts `expirable` in the bucket of its deadline, `timeoutMs` from now (up to BUCKET_MS later), and returns
 * that bucket: the caller cancels it there once answered, or it is rejected when the bucket expires.
 */
export function expireAfter(expirable: Expirable): DeadlineBucket {
  const at = Math.ceil((performance.now() + expirable.timeoutMs) / BUCKET_MS) * BUCKET_MS;
  let bucket = buckets.get(at);
  if (!bucket) {
    bucket = new DeadlineBucket();
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
    const pending: Expirable = { reject, timeoutMs, deadlineSlot: undefined };
    const bucket = expireAfter(pending);
    promise.then(
      (value) => {
        bucket.cancel(pending);
        resolve(value);
      },
      (error: unknown) => {
        bucket.cancel(pending);
        reject(error);
      },
    );
  });
}
