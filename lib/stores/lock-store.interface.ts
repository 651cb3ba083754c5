// The LockStore seam: what the engine asks of where leases live (memory, one Redis, Redlock), and what it answers.
import type { LockKeyNames } from '../keys/lock-key-names';
import type { LockShape } from '../options/lock-shape';
import type { StoreHealth } from './store-health';

/**
 * The one seam between the lock engine and where leases live. LockService, @Locked, renewal, reentrancy
 * and waiting are written against this interface only; memory, one Redis and Redlock implement it.
 */

export type { LockKeyNames } from '../keys/lock-key-names';

export { MUTEX, type LockShape } from '../options/lock-shape';

export interface AcquireRequest {
  readonly keys: readonly LockKeyNames[];
  readonly token: string;
  /** Lease length in ms. */
  readonly ttl: number;
  /** What to hold; a mutex when absent. Permit shapes (semaphore, read) come with one key only. */
  readonly shape?: LockShape;
  /**
   * A writer (mutex) whose earlier attempt on this key recorded its writer-waiting intent (the outcome said
   * `queued`): the attempt keeps the intent fresh while readers still hold the key.
   */
  readonly queued?: boolean;
  /**
   * The caller makes no further attempt (tryAcquire, `wait: 0`, or its wait has run out): a single-key writer
   * that meets readers records no intent, which would only be withdrawn at once and turn new readers away
   * meanwhile (an intent renewed by an earlier attempt is left for the caller's withdrawal).
   */
  readonly final?: boolean;
  /**
   * The least fence this grant may take, in µs, the same on every node of a Redlock round (the caller's clock,
   * see RedlockAttempts.attempt); absent, the Redis server reads its own clock when the script runs (see
   * NEXT_FENCE).
   */
  readonly fenceFloor?: number;
}

export type AcquireOutcome =
  | {
      readonly acquired: true;
      /** Fencing token per key, in the order of `keys`. */
      readonly fences: readonly number[];
      /** performance.now() time until which the lease is known valid (clock drift already deducted). */
      readonly validUntil: number;
      /**
       * Room for another holder right now (a reader, or a permit left): a waiter woken for this grant
       * passes the wake-up on, so that several waiters get in after one release or expiry.
       */
      readonly vacant?: boolean;
    }
  | {
      readonly acquired: false;
      /** ms until the blocking lease would expire if not renewed; -1 when unknown. */
      readonly retryAfter: number;
      /**
       * A writer blocked by readers: its writer-waiting intent is now recorded (new readers queue behind
       * it). Its next attempts say `queued`, and `withdraw` removes the intent when it is done waiting.
       */
      readonly queued?: boolean;
      /**
       * The grants the refusing nodes named, when the key is held on a quorum (Redlock); undefined when
       * unknown (permits, foreign data, nodes split between attempts). A release seen during this attempt
       * that is none of them was of no grant that held the key when the nodes refused this attempt (an
       * earlier one, or a minority leftover), so it freed nothing for it (see releasedSince).
       */
      readonly refusedBy?: readonly string[];
      /**
       * Refused by readers (a read-write lock's), not by a writer: every refusal that held the key named readers.
       * Only for the caller's message ("held by readers"); absent when unknown or mixed.
       */
      readonly byReaders?: boolean;
    };

/** A granted outcome: what an attempt, or a hand-over (see HandoverOffer), gives the waiter. */
export type AcquireGrant = Extract<AcquireOutcome, { acquired: true }>;

/**
 * A single-key mutex waiter's consent to be handed the lock directly by a release of this process: the
 * store then releases and grants to `token` in one step (one script, one round trip, nothing published)
 * instead of releasing, publishing, and letting the woken waiter attempt.
 */
export interface HandoverOffer {
  /** The waiter's lease value, which the grant is made to. */
  readonly token: string;
  /** The waiter's lease length (ms). */
  readonly ttl: number;
  /**
   * Whether the waiter still takes a grant now: false once its service shuts down (a release made by the
   * shutdown itself must not hand the key to a caller about to be refused). A cancelled waiter has already
   * left the queue.
   */
  accepts(): boolean;
  /**
   * Called when a release claims the waiter, before the hand-over is sent: the waiter's service counts the
   * hand-over as in flight from then on, so a shutdown that begins meanwhile waits to take its grant back.
   */
  claimed(): void;
  /** Called when the claim came to nothing (the waiter attempts itself): the hand-over is no longer in flight. */
  declined(): void;
}

/** A held key, as the store sees it (inspect). */
export interface LockState {
  readonly kind: 'mutex' | 'semaphore' | 'read-write';
  readonly holders: readonly {
    /** The lease's stored value, `<token>|<instance>`. */
    readonly value: string;
    /** ms until it expires unless renewed. */
    readonly ttlLeft: number;
    readonly fence: number;
  }[];
}

export interface LockStore {
  /** Human-readable kind for logs and health: 'memory', 'redis' or 'redlock'. */
  readonly kind: string;
  /**
   * One attempt, all keys or none. Rejects with LockUnavailableError when the store cannot answer. After a
   * rejection the token is not to be used again: a grant taken back (Redlock) was announced as a release of
   * it, and a later release of the same token would not be counted as a new one.
   */
  acquire(request: AcquireRequest): Promise<AcquireOutcome>;
  /**
   * Renews every key if all are still held with `token` (as `shape`): the new validUntil, or null when not held.
   * Rejects with LockUnavailableError when the store cannot answer (a lease retries until its validity ends),
   * and with LockOptionsError when it refuses every renewal for good (Redlock nodes found to be one server):
   * the lease is then lost at once, with that reason.
   */
  extend(request: AcquireRequest): Promise<number | null>;
  /**
   * Compare-and-delete of every key; true when all were still held with `token`. With `holdFor` > 0
   * (minHold not yet reached) the keys are not deleted but set to expire in `holdFor` ms, still under
   * `token`; the release is announced all the same (when announced at all: a caller was refused by the
   * lease, or callers of this process watch the key), so a waiter re-reads when the key will be free.
   */
  release(keys: readonly LockKeyNames[], token: string, holdFor?: number, shape?: LockShape): Promise<boolean>;
  /**
   * Removes the writer-waiting intent `token` recorded on `key` (a writer done waiting: granted, or given
   * up). `announce`: tell the readers it kept waiting (a writer that gave up), as a release does.
   */
  withdraw(key: LockKeyNames, token: string, announce: boolean): Promise<void>;
  isLocked(key: LockKeyNames): Promise<boolean>;
  /** Starts watching the keys for releases, so that a waiter can sleep instead of polling. */
  watch(keys: readonly LockKeyNames[]): ReleaseWatch;
  /**
   * Whether callers of this process already sleep waiting for one of the keys. A newcomer then queues
   * behind them instead of barging in (it would win against a waiter just woken, again and again).
   */
  hasWaiters(keys: readonly LockKeyNames[]): boolean;
  /**
   * Wakes every caller of this process asleep waiting for a release, each to look again. At shutdown, before
   * anything else, so that waiters are refused at once rather than after the held locks' deletions.
   */
  wakeWaiters(): void;
  /** Resolves when the store answers; rejects with LockUnavailableError otherwise. */
  ping(): Promise<void>;
  /**
   * What holds `key` now (Redlock: what a quorum of nodes says), or null when free. Rejects with
   * LockUnavailableError when the store (a quorum) does not answer.
   */
  inspect(key: LockKeyNames): Promise<LockState | null>;
  /**
   * Deletes every lease on `key` whoever holds it and announces the release on its channel; the fence
   * counter is left alone. Resolves with the values evicted (none when the key was free).
   */
  forceRelease(key: LockKeyNames): Promise<string[]>;
  /** Probes the store for the health indicator; never rejects (Redlock: each node's answer). */
  health(): Promise<StoreHealth>;
  /** Closes what the store opened itself; borrowed clients are left open. */
  close(): Promise<void>;
}

/** A waiter's view of release announcements on some keys. */
export interface ReleaseWatch {
  /**
   * How many releases of the watched keys were seen so far: read it right before each attempt and compare
   * after. Reading it also marks a wake-up this waiter received as used, and the announcements heard so far
   * (repeats included) as the ones releasedSince compares with: read it once per attempt. A waiter that sleeps
   * before it ever read `seen` (queued behind this process's sleepers without an attempt) has read no lease
   * end: it sleeps "blind", and the sleepers ahead of it pass it the turn or their lease end (see close).
   */
  readonly seen: number;
  /**
   * Whether a release seen since `seen` read `mark` may have freed the keys for the attempt `refusal` answers,
   * so that the waiter attempts again at once instead of sleeping:
   * - refused by the grants `refusedBy` (see AcquireOutcome): only a release of one of them, or one without a
   *   token, or one the watch no longer remembers; or a refusing grant's release counted before the attempt and
   *   announced again since by another node (Redlock: that node had not applied it when the attempt reached it);
   * - a queued writer: any release (the waiter a release woke may be a reader its mark refuses);
   * - otherwise, a release that woke no sleeper (or a wake-up passed on to nobody), which this waiter then takes,
   *   so another waiter refused meanwhile does not: each release goes to one waiter, and one that woke a sleeper
   *   is that sleeper's to attempt for.
   */
  releasedSince(mark: number, refusal: WatchRefusal): boolean;
  /** Resolves once a release announced from now on is certain to be seen. */
  ready(): Promise<void>;
  /**
   * Sleeps until a release wakes this waiter (one waiter per release, first come first served; `first`:
   * ahead of the others, for a writer queued behind readers), or `timeoutMs` passes. Rejects with the
   * signal's reason when it aborts. With an `offer`, a release of this process may instead hand the lock
   * over: next() then resolves with the grant (once claimed, the waiter waits for the hand-over's answer,
   * which its timer and signal no longer cut short). Otherwise it resolves with undefined: attempt again.
   * `refusedBy`: the grants that refused the last attempt; when the release of one of them was already seen
   * (nodes still applying it refused the attempt), another node's announcement of that release wakes this
   * waiter too, though it is not counted as a new release.
   */
  next(
    timeoutMs: number,
    signal?: AbortSignal,
    first?: boolean,
    offer?: HandoverOffer,
    refusedBy?: readonly string[],
  ): Promise<AcquireGrant | undefined>;
  /**
   * Stops watching. A wake-up this waiter received but did not use passes to the next waiter, and so does
   * its turn when it leaves without the lock or got in and left room for more. When the next waiter sleeps
   * blind (see `seen`) and this one's grant does not hold the key alone (see WatchLeaving), it is handed the
   * lease end this waiter watched, or, when this one watched none, woken to read one.
   */
  close(leaving?: WatchLeaving): void;
}

/** What ReleaseWatch.releasedSince needs of a refused attempt's outcome. */
export type WatchRefusal = Pick<Extract<AcquireOutcome, { acquired: false }>, 'refusedBy' | 'queued'>;

/** How a waiter leaves its ReleaseWatch (ReleaseWatch.close); nothing given: granted, alone. */
export interface WatchLeaving {
  /** Got the lock (default true). */
  readonly acquired?: boolean;
  /** Got in and left room for another holder: a reader, or a permit left. */
  readonly roomLeft?: boolean;
  /**
   * Got in holding the key alone (a mutex or a writer; default true): its own release, made in this process,
   * wakes the sleeper behind it, so a blind sleeper there sleeps on. A permit or a reader does not: the key's
   * other holders may expire, unannounced, while it holds the last permit, so it hands a blind sleeper its lease
   * end to watch.
   */
  readonly alone?: boolean;
}
