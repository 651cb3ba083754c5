// One grant from the store and what keeps it: renewal, the local validity deadline, and the signal of its loss.
import type { Logger } from '@nestjs/common';
import { LockLostError, LockOptionsError } from '../../errors';
import { MIN_TTL_MS } from '../../lock.constants';
import type { Lock } from '../../lock.interface';
import type { LockKeyNames, LockShape, LockStore } from '../../stores/lock-store.interface';
import { checkedOnRead } from './read-checked-signal';
import type { RenewalScheduler, ScheduledTask } from './renewal-scheduler';
import { safeMessage } from '../../errors/safe-cause';

/** What a lease needs from the service that granted it. */
export interface LeaseHost {
  readonly store: LockStore;
  readonly scheduler: RenewalScheduler;
  readonly logger: Logger;
  /** Called once when the lease ends (released or lost), so the host can forget it. */
  ended(lease: Lease): void;
  /** Releases `lock`, logging a failure instead of throwing it (withLock's release; `await using`'s too). */
  releaseQuietly(lock: Lock): Promise<void>;
  /**
   * Lets `work` (which must never reject unhandled) finish without a caller; shutdown waits for it before closing the
   * store.
   */
  inBackground(work: Promise<unknown>): void;
}

export interface LeaseTerms {
  readonly names: readonly LockKeyNames[];
  /** Lock.token: the grant's random part. */
  readonly token: string;
  /** What the store holds, `<token>|<instance>`: the value its compare scripts check (lease-owner.ts). */
  readonly value: string;
  /** The call's label, for metrics and events. */
  readonly label?: string;
  /** performance.now() time the grant was seen (hold times). */
  readonly grantedAt: number;
  readonly fences: readonly number[];
  readonly validUntil: number;
  /** The lease length each renewal asks for. */
  readonly ttl: number;
  readonly autoExtend: boolean;
  /** performance.now() time after which no renewal extends the lease (maxHold). */
  readonly holdUntil: number;
  /** performance.now() time before which a release leaves the lease in place to expire then (minHold). */
  readonly minHoldUntil: number;
  /** A permit of a semaphore or a reader (one of several holders of the key); a mutex when absent. */
  readonly shape?: LockShape;
}

type LeaseState = 'held' | 'released' | 'lost';

/**
 * One grant from the store, and everything that keeps it: auto-extension (around ttl/3), the local
 * validity deadline on the monotonic clock, and the signal that aborts once the grant is known lost.
 * Several Lock handles can share one lease (reentrancy); it is released in the store when the last
 * handle lets go.
 */
export class Lease implements ScheduledTask {
  dueAt = 0;
  heapIndex = -1;
  /** Handles still holding this lease. */
  holds = 1;
  readonly keys: readonly string[];
  private state: LeaseState = 'held';
  private validUntil: number;
  private renewAt: number;
  private renewing = false;
  /** Extensions sent to the store (renewals and explicit extends), and the latest one whose answer was applied. */
  private extensionsSent = 0;
  private extensionApplied = 0;
  private controller: AbortController | undefined;
  /**
   * Set once a renewal was shortened to end at maxHold: the validity that runs out after that is maxHold's
   * doing, not a failed renewal's.
   */
  private cappedByMaxHold = false;
  private lostReason: LockLostError | undefined;
  private lostWhy: string | undefined;

  constructor(
    private readonly host: LeaseHost,
    readonly terms: LeaseTerms,
  ) {
    this.keys = terms.names.map((name) => name.name);
    this.validUntil = terms.validUntil;
    this.renewAt = terms.grantedAt + terms.ttl / 3;
    this.reschedule();
  }

  get token(): string {
    return this.terms.token;
  }

  /** Why it was lost, in words (events and metrics); undefined while held or once released. */
  get lostBecause(): string | undefined {
    return this.lostWhy;
  }

  /** The service that granted this lease: reentrancy never crosses services (stores). */
  get owner(): LeaseHost {
    return this.host;
  }

  /**
   * Held: not released, not known lost, and still within its validity deadline. The deadline is checked
   * here too, not only by the scheduler's timer: after a blocked event loop the timer has not fired yet,
   * and a reentrant acquire must never borrow a lease that may already belong to someone else.
   */
  get isHeld(): boolean {
    if (this.state === 'held' && performance.now() >= this.validUntil) {
      this.lose('its validity ended before it was renewed (the event loop was blocked, or Redis was unreachable)');
    }
    return this.state === 'held';
  }

  /**
   * Made on first use: most locks are released without anyone reading their signal. Reading it checks the
   * validity deadline (isHeld), so a holder that runs again after its lease ran out reads it aborted before
   * it can act, whether or not the scheduler's timer has fired yet.
   */
  get signal(): AbortSignal {
    if (!this.controller) {
      this.controller = new AbortController();
      if (this.lostReason) this.controller.abort(this.lostReason);
      else checkedOnRead(this.controller.signal, () => void this.isHeld);
    }
    return this.controller.signal;
  }

  /** Renews now (an explicit Lock.extend). */
  async extend(ttl: number): Promise<void> {
    // isHeld, not the state: a lease whose validity ended is lost even while the store still holds the key
    // (its clock ran slow, or nobody took it yet); extending it would revive a lock its holder must not trust.
    if (!this.isHeld) throw this.lostReason ?? new LockLostError(this.keys, 'it was already released');
    const sequence = ++this.extensionsSent;
    let validUntil: number | null;
    try {
      validUntil = await this.host.store.extend({
        keys: this.terms.names,
        token: this.terms.value,
        ttl,
        shape: this.terms.shape,
      });
    } catch (error) {
      if (error instanceof LockOptionsError) throw this.refused(error);
      throw error;
    }
    if (validUntil === null) {
      const lost = this.lose('the lease had expired or was taken when extending');
      throw lost;
    }
    this.renewed(validUntil, ttl, sequence);
  }

  /**
   * Ends the lease in the store. true when every key was still held by this grant. Not async, like the
   * other layers of a release (each promise layer costs on the hot path), but it never throws: whatever
   * fails before the store is asked (a telemetry exporter's error in host.ended) is a rejection, as it was.
   */
  release(): Promise<boolean> {
    try {
      return this.releaseInStore();
    } catch (error) {
      return Promise.reject(error);
    }
  }

  private releaseInStore(): Promise<boolean> {
    if (this.state === 'released') return Promise.resolve(false);
    // isHeld, not the state alone: a lease whose validity ran out before its timer fired (a blocked event loop,
    // a release in the same turn) is lost now, reported once, and answered like any lost lease below.
    const wasHeld = this.isHeld;
    // A lost lease already ended (host.ended ran when it was lost): it is only deleted in the store now, not
    // reported a second time (before: two 'lost' events, lock.lost counted twice, lock.held below zero).
    if (wasHeld) this.stop('released');
    else this.state = 'released';
    // A lease believed lost may still sit in Redis (its renewal just came too late): delete it anyway.
    // Released before minHold: left in place, still under this token, to expire at grant + minHold.
    const holdFor = Math.ceil(this.terms.minHoldUntil - performance.now());
    // Asked before the store is: a release may hand the key to one of them, which takes it off that list.
    const othersWaitHere = !wasHeld && this.host.store.hasWaiters(this.terms.names);
    const released = this.host.store.release(
      this.terms.names,
      this.terms.value,
      Math.max(0, holdFor),
      this.terms.shape,
    );
    if (wasHeld) return released;
    // A lease already known lost answers false whatever the store says: its holder was told of the loss (signal,
    // warning, 'lost' event), and a deletion that fails (Redis unreachable, the usual cause of the loss) leaves
    // it to expire, as it would have. Thrown, it would replace the caller's own error in a `finally`.
    const answered = released.then(notReleased, notReleased);
    // Waited for when callers of this process wait for the keys: the release may be handing the key to one of
    // them, and a caller answered before that hand-over could take the key back first.
    if (othersWaitHere) return answered;
    // Otherwise answered at once: with Redis unreachable, waiting for the deletion would hold withLock's,
    // @Locked's or `await using`'s result back by a whole command timeout. The deletion is already queued on
    // the store's connections, ahead of this LockService's later commands (unless the server lost the script
    // and it is sent again), and shutdown waits for it within its budget.
    this.host.inBackground(answered);
    return Promise.resolve(false);
  }

  /**
   * @internal Sends the next renewal now rather than at its time (LockTesting.loseHeld, once the lease is gone
   * from the store): the holder learns of the loss from the answer a renewal gets, without a test waiting for
   * ttl/3. A renewal already in flight does not matter: the later one's answer decides (see renewed).
   */
  renewNow(): Promise<void> {
    return this.state === 'held' ? this.renew() : Promise.resolve();
  }

  /** Declares the lease lost now (its signal aborts with `reason`); release() still deletes it in the store. */
  revoke(reason: string): void {
    this.lose(reason);
  }

  /** Scheduler callback: the validity deadline or a renewal is due. */
  run(): void {
    if (this.state !== 'held') return;
    const now = performance.now();
    if (now >= this.validUntil) {
      let why = 'it was not renewed before its validity ended (Redis unreachable, or the event loop blocked)';
      if (!this.terms.autoExtend) why = 'its lease ran out (auto-extension off)';
      // Past the last renewal maxHold allows (see renewable): the lease ends there by design.
      else if (this.cappedByMaxHold || this.terms.holdUntil - now < MIN_TTL_MS)
        why = 'its lease ran out: maxHold reached';
      this.lose(why);
      return;
    }
    if (!this.renewing && this.renewable() && performance.now() >= this.renewAt) void this.renew();
    this.reschedule();
  }

  /**
   * Whether a renewal is still due: auto-extension on, and enough time left before maxHold for a renewal to
   * be worth sending (one shorter than the shortest ttl would, after drift and the round trip, leave no
   * validity: its "not extended" answer would read as a lost lease).
   */
  private renewable(): boolean {
    return this.terms.autoExtend && this.terms.holdUntil - performance.now() >= MIN_TTL_MS;
  }

  private async renew(): Promise<void> {
    this.renewing = true;
    const ttl = Math.min(this.terms.ttl, this.terms.holdUntil - performance.now());
    // The last renewal, shortened to end at maxHold.
    if (ttl < this.terms.ttl) this.cappedByMaxHold = true;
    const sequence = ++this.extensionsSent;
    let validUntil: number | null;
    try {
      validUntil =
        ttl >= 1
          ? await this.host.store.extend({
              keys: this.terms.names,
              token: this.terms.value,
              ttl,
              shape: this.terms.shape,
            })
          : this.validUntil;
    } catch (error) {
      this.renewing = false;
      if (this.state !== 'held') return;
      if (error instanceof LockOptionsError) {
        this.refused(error);
        return;
      }
      // Unreachable for now: keep the validity we have and try again soon; the deadline decides.
      this.host.logger.warn(`Renewing the lock on ${this.keys.join(', ')} failed: ${safeMessage(error)}`);
      this.renewAt = performance.now() + Math.min(this.terms.ttl / 10, 200);
      this.reschedule();
      return;
    }
    this.renewing = false;
    if (this.state !== 'held') return;
    if (validUntil === null) {
      // A renewal shortened to end at maxHold leaves little validity: an answer that came after it is no news of a
      // loss.
      this.lose(
        this.cappedByMaxHold
          ? 'its lease ran out: maxHold reached (its last renewal, ' +
              'shortened to end at maxHold, was not confirmed in time)'
          : 'the lease was gone when renewing it (expired, deleted or taken)',
      );
    } else {
      this.renewed(validUntil, this.terms.ttl, sequence);
    }
  }

  private renewed(validUntil: number, ttl: number, sequence: number): void {
    if (this.state !== 'held') return;
    // The latest extension sent decides, also when it shortens the lease (extend() with a smaller ttl, or
    // the last renewals under maxHold): Redis applied them in the order they were sent, so keeping the
    // longer of two validities would let this holder believe in a lease Redis has already let go. An answer
    // that arrives after a later extension's was applied is stale.
    if (sequence < this.extensionApplied) return;
    this.extensionApplied = sequence;
    this.validUntil = validUntil;
    // Counted from the answer, but never past half the validity left: a slow answer (a WAIT for replicas
    // under minReplicas) would otherwise put the next renewal after the deadline, losing a lease that every
    // renewal kept.
    const now = performance.now();
    this.renewAt = now + Math.min(ttl / 3, (validUntil - now) / 2);
    this.reschedule();
  }

  private reschedule(): void {
    if (this.state !== 'held') return;
    const renewAt = this.renewable() && !this.renewing ? this.renewAt : Infinity;
    this.host.scheduler.schedule(this, Math.min(this.validUntil, renewAt));
  }

  /**
   * The store refuses every renewal for good (a Redlock whose nodes turned out to be one server): no retry
   * could succeed, and the holder is told why instead of a generic "gone when renewing".
   */
  private refused(error: LockOptionsError): LockLostError {
    // LockLostError ends the reason with its own period.
    return this.lose(`its renewal was refused: ${error.message.replace(/\.$/, '')}`, error);
  }

  private lose(reason: string, cause?: Error): LockLostError {
    const lost = new LockLostError(this.keys, reason, cause ? { cause } : undefined);
    if (this.state !== 'held') return lost;
    this.lostReason = lost;
    this.lostWhy = reason;
    // The signal first: a listener of the 'lost' event (or a reader of the warning) reads it aborted.
    this.state = 'lost';
    this.controller?.abort(lost);
    this.stop('lost');
    return lost;
  }

  private stop(state: LeaseState): void {
    this.state = state;
    this.host.scheduler.remove(this);
    this.host.ended(this);
  }
}

function notReleased(): false {
  return false;
}
