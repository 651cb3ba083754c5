// The events `LockService.events` reports: grants, releases, losses, failed acquisitions, and leadership terms.
import type { LeaderDeposedReason } from '../engine/leader/leader.interface';

/**
 * What `LockService.events` reports: one of these per grant, release, loss, and failed acquisition, and per
 * term of office of a leadership (elected, deposed).
 */
export type LockEventType = 'acquired' | 'released' | 'busy' | 'lost' | 'unavailable' | 'elected' | 'deposed';

interface LockEventOf<Type extends LockEventType> {
  readonly type: Type;
  /** The keys concerned, as given (without the prefix). */
  readonly keys: readonly string[];
  /** The `instance` option of the service that reports it (`<hostname>:<pid>` by default). */
  readonly instance: string;
  /** The call's `label` (a @Locked method's key template by default), when there is one. */
  readonly label?: string;
  /** The store kind: 'memory', 'redis' or 'redlock'. */
  readonly store: string;
  /** When it happened, in ms since the epoch (Date.now()). */
  readonly at: number;
}

/** A grant from the store (a reentrant acquisition, which takes nothing from the store, is not one). */
export interface LockAcquiredEvent extends LockEventOf<'acquired'> {
  /** From the call to the grant, in ms (0 wait: one round trip). */
  readonly waitedMs: number;
  /** The grant's fencing token per key. */
  readonly fences: Readonly<Record<string, number>>;
}

/** A grant released by its holder (minHold hold-overs included: the release is when the holder let go). */
export interface LockReleasedEvent extends LockEventOf<'released'> {
  /** From the grant to the release, in ms. */
  readonly heldMs: number;
}

/** An acquisition that gave up because the keys stayed busy (`wait` ran out; tryAcquire's null). */
export interface LockBusyEvent extends LockEventOf<'busy'> {
  readonly waitedMs: number;
}

/** A grant known lost before its release: expired, taken, force-released, unreachable, or shut down. */
export interface LockLostEvent extends LockEventOf<'lost'> {
  /** From the grant to the moment it was known lost, in ms. */
  readonly heldMs: number;
  /** Why, as in the LockLostError the holder's signal aborts with. */
  readonly reason: string;
}

/** An acquisition that failed because the store could not be reached (or no Redlock quorum answered). */
export interface LockUnavailableEvent extends LockEventOf<'unavailable'> {
  readonly waitedMs: number;
  /** The LockUnavailableError's message. */
  readonly reason: string;
}

/**
 * This instance won a leadership (LockService.lead, @Leader): its term begins. `keys` is the leadership's lock
 * key (`leader:<name>`).
 */
export interface LockElectedEvent extends LockEventOf<'elected'> {
  /** The leadership's name. */
  readonly leader: string;
  /** The term (the grant's fencing token). */
  readonly term: number;
}

/** This instance's term of a leadership ended. */
export interface LockDeposedEvent extends LockEventOf<'deposed'> {
  /** The leadership's name. */
  readonly leader: string;
  /** The term that ended. */
  readonly term: number;
  /** lost (the lease), resigned (`fn` returned or threw, or stop()), shutdown. */
  readonly reason: LeaderDeposedReason;
  /** From the election to the end of the term, in ms. */
  readonly ledMs: number;
}

export type LockEvent =
  | LockAcquiredEvent
  | LockReleasedEvent
  | LockBusyEvent
  | LockLostEvent
  | LockUnavailableEvent
  | LockElectedEvent
  | LockDeposedEvent;
