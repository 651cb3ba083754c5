/** The public shapes of leader election: a term of office, a leadership handle, and who leads now. */

/** One term of office of this instance: what `fn` (or a `@Leader` method) is given while it leads. */
export interface LeaderTerm {
  /** The leadership's name. */
  readonly name: string;
  /** This instance (the module's `instance` option). */
  readonly instance: string;
  /**
   * The grant's fencing token: strictly greater than every earlier term of this name, so a resource that
   * remembers the last term it saw can refuse a deposed leader's late writes.
   */
  readonly term: number;
  /**
   * Aborts, reason a LockLostError, when this term ends: the lease was lost, or the leadership was stopped or
   * is shutting down. Read after the lease's validity ended, it reads aborted (also when no timer has run yet).
   */
  readonly signal: AbortSignal;
}

/** A campaign started by `LockService.lead`. */
export interface Leadership {
  /** Whether this instance leads now (its term has not ended). */
  readonly isLeader: boolean;
  /** The current term while this instance leads, undefined otherwise. */
  readonly term: LeaderTerm | undefined;
  /**
   * Stops campaigning for good: a term under way ends (its signal aborts), and once `fn` has returned the
   * lease is released, so another instance takes over about one round trip later. Resolves then. Idempotent.
   * Called from inside the term (its `fn`, or work `fn` started), it resolves once the term has ended, without
   * waiting for that `fn` to return: the release follows when it does.
   */
  stop(): Promise<void>;
}

/** Who leads `name` now, as the store says (`LockService.leader`). */
export interface LeaderInfo {
  /** The leadership's name. */
  readonly name: string;
  /** The leader's `instance`. */
  readonly instance: string;
  /** The leader's term (its grant's fencing token). */
  readonly term: number;
  /** ms until its lease expires unless renewed. */
  readonly ttlLeft: number;
}

/**
 * Why a term ended: `lost` (the lease expired, was taken or force-released, or could not be renewed),
 * `resigned` (`fn` returned or threw, or `stop()` was called), `shutdown` (the application is shutting down).
 */
export type LeaderDeposedReason = 'lost' | 'resigned' | 'shutdown';
