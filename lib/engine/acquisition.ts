/**
 * The acquisition engine: turns one acquire or tryAcquire call into a held lock. It resolves the call's
 * settings, borrows what the async context already holds (reentrancy), attempts on the store, and waits
 * between attempts on release announcements, with fallback wake-ups and hand-overs from releases of this
 * process. LockService is the facade in front of it and owns the lifecycle (held leases, shutdown).
 */
import { LockLostError, LockNotAcquiredError, LockOptionsError, LockUnavailableError } from '../errors';
import { SHUTTING_DOWN } from '../errors/unavailable-details';
import { type LockKeyNamer, normalizeKeys, refuseLeaderKeys } from '../keys';
import { HeldLock } from './lease/held-lock';
import type { InFlight } from './lease/in-flight';
import { Lease, type LeaseHost } from './lease/lease';
import { checkReentry } from './lease/reentry';
import { randomToken } from './lease/token';
import type { LockContext } from './lock-context';
import type { AcquireOptions, ResolvedLockOptions } from '../options/lock-options.interface';
import { resolveCallSettings } from '../options/call-settings';
import { leaseValue } from '../observability/lease-owner';
import type { LockObserver } from '../observability/lock-observer';
import type {
  AcquireGrant,
  AcquireOutcome,
  AcquireRequest,
  HandoverOffer,
  LockKeyNames,
  LockStore,
  ReleaseWatch,
} from '../stores/lock-store.interface';
import { type Attempt, handoverOffer } from './attempt';
import { MAX_TIMER_DELAY_MS } from '../util/timers';

/** An attempt made with less than this left of the wait is the caller's last (see grantWaiting). */
const LAST_ATTEMPT_MARGIN_MS = 2;

/** What the engine works with, all owned by the service that constructs it. */
export interface AcquisitionOptions {
  /** The leases' host, and the owner reentrancy matches: a context borrows only this service's leases. */
  readonly host: LeaseHost;
  readonly store: LockStore;
  readonly options: ResolvedLockOptions;
  readonly namer: LockKeyNamer;
  readonly observer: LockObserver;
  /** Which locks each async context holds (shared by every service of the process). */
  readonly context: LockContext;
  /** Store commands shutdown lets finish before it closes the store. */
  readonly inFlight: InFlight;
  /** Whether shutdown has begun: nothing is attempted, subscribed to or handed out from then on. */
  readonly closed: () => boolean;
  /** Takes a lease just granted into the service's keeping, until it ends. */
  readonly adopt: (lease: Lease) => void;
}

export class Acquisition {
  private readonly host: LeaseHost;
  private readonly store: LockStore;
  private readonly options: ResolvedLockOptions;
  private readonly namer: LockKeyNamer;
  private readonly observer: LockObserver;
  private readonly context: LockContext;
  private readonly inFlight: InFlight;
  private readonly closed: () => boolean;
  private readonly adopt: (lease: Lease) => void;
  /** Writers waiting behind readers, by lease value: the key their "waiting" mark is on. */
  private readonly writerMarks = new Map<string, LockKeyNames>();

  constructor(options: AcquisitionOptions) {
    this.host = options.host;
    this.store = options.store;
    this.options = options.options;
    this.namer = options.namer;
    this.observer = options.observer;
    this.context = options.context;
    this.inFlight = options.inFlight;
    this.closed = options.closed;
    this.adopt = options.adopt;
  }

  /**
   * Shutdown: writers still waiting withdraw their marks now, while the store accepts it (their own withdrawal
   * would come after it closed, and other instances' readers would wait a writer's ttl for nothing).
   */
  withdrawWriterMarks(): void {
    for (const [value, name] of this.writerMarks)
      void this.inFlight.track(this.store.withdraw(name, value, true).catch(() => undefined));
    this.writerMarks.clear();
  }

  /** `leadership`: a campaign's acquisition, the only one that may take a key of the leaderships' namespace. */
  async obtain(
    key: unknown,
    options: AcquireOptions | undefined,
    once: boolean,
    leadership = false,
  ): Promise<HeldLock | null> {
    const keys = normalizeKeys(key);
    if (!leadership) refuseLeaderKeys(keys);
    const settings = resolveCallSettings(this.options, options);
    const shape = settings.shape;
    if (shape && keys.length > 1) {
      // All-or-none over several semaphores or read-write locks would need every store to count permits of
      // several keys in one step (and Redlock quorums per limit): refused rather than half supported.
      throw new LockOptionsError(
        shape.kind === 'semaphore' ? 'limit' : 'mode',
        shape.kind === 'semaphore' ? shape.limit : 'read',
        'one key per call: `limit` and `mode` apply to a single key (acquire each key in its own call)',
      );
    }
    if (this.closed()) throw new LockUnavailableError(keys, SHUTTING_DOWN);

    const borrowed: Lease[] = [];
    let missing = keys;
    if (settings.reentrant) {
      missing = [];
      for (const name of keys) {
        const lease = this.context.leaseFor(name, this.host);
        if (lease) checkReentry(name, lease.terms.shape, shape);
        if (lease && !borrowed.includes(lease)) borrowed.push(lease);
        if (!lease) missing.push(name);
      }
    }
    // Pinned before any await: the outer holder may let go while this call waits for the other keys.
    for (const lease of borrowed) lease.holds++;
    let own: Lease | undefined;
    if (missing.length > 0) {
      const names = missing.map((name) => this.namer.names(name));
      const token = randomToken();
      // The owner rides in the lease's value: named without another command, compared whole by the scripts.
      const value = leaseValue(token, this.options.instance);
      const attempt: Attempt = { names, value, settings, keys, once, startedAt: performance.now(), span: undefined };
      try {
        let granted: AcquireGrant | null;
        try {
          granted = await this.grant(attempt);
        } catch (error) {
          this.observer.notAcquired(keys, settings.label, attempt.startedAt, error, attempt.span, settings.signal);
          await this.unpin(borrowed);
          throw error;
        }
        if (!granted) {
          this.observer.notAcquired(keys, settings.label, attempt.startedAt, null, attempt.span);
          await this.unpin(borrowed);
          return null;
        }
        if (this.closed() || !borrowed.every((lease) => lease.isHeld)) {
          // Shutdown began, or a borrowed lease was lost, while this call waited: nothing may be handed out.
          await this.inFlight.track(this.store.release(names, value, 0, shape).catch(() => undefined));
          await this.unpin(borrowed);
          const error = this.closed()
            ? new LockUnavailableError(keys, SHUTTING_DOWN)
            : new LockLostError(keys, 'a lock this context already held on some of the keys was lost meanwhile');
          this.observer.notAcquired(keys, settings.label, attempt.startedAt, error, attempt.span);
          throw error;
        }
        const grantedAt = performance.now();
        own = new Lease(this.host, {
          names,
          token,
          value,
          label: settings.label,
          grantedAt,
          fences: granted.fences,
          validUntil: granted.validUntil,
          ttl: settings.ttl,
          autoExtend: settings.autoExtend,
          holdUntil: grantedAt + settings.maxHold,
          // Counted from when the grant was seen, i.e. after Redis made it: the hold-over never ends early.
          minHoldUntil: grantedAt + settings.minHold,
          shape,
        });
        this.adopt(own);
        this.observer.acquired(missing, granted.fences, settings.label, attempt.startedAt, attempt.span);
      } finally {
        // A grant handed over while shutdown began is released (tracked) or adopted by the service by now.
        attempt.handoverDealtWith?.();
      }
    }
    return new HeldLock(keys, own ? [...borrowed, own] : borrowed, (lease) => this.letGo(lease));
  }

  /**
   * Attempts until granted or `wait` runs out (`once`: a single attempt, null when busy). Between attempts the caller
   * sleeps on the store's release announcements (no polling), with a fallback wake-up when the holder's lease would
   * expire (expiry is not announced) plus random jitter, so waiters of several processes do not retry in step.
   */
  private grant(attempt: Attempt): Promise<AcquireGrant | null> {
    // The first attempt without the waiting loop's async frame (the hot path of every lock): nobody of
    // this process waits for these keys, the caller is not cancelled, shutdown has not begun. Anything but
    // a clean grant goes on in the loop, which starts from this outcome.
    const { names, value, settings, keys, once } = attempt;
    const signal = settings.signal;
    if (this.closed() || signal?.aborted || (!once && this.store.hasWaiters(names)))
      return this.grantWaiting(attempt, undefined);
    const ttl = Math.min(settings.ttl, settings.maxHold);
    const final = once || settings.wait <= 0;
    return this.attempt({ keys: names, token: value, ttl, shape: settings.shape, queued: false, final }, keys).then(
      (outcome) => (outcome.acquired && !signal?.aborted ? outcome : this.grantWaiting(attempt, outcome)),
    );
  }

  /** The waiting loop of grant(); `first`: the outcome of an attempt already made, or undefined to start afresh. */
  private async grantWaiting(attempt: Attempt, first: AcquireOutcome | undefined): Promise<AcquireGrant | null> {
    const { names, value, settings, keys, once, startedAt } = attempt;
    const deadline = startedAt + (once ? 0 : settings.wait);
    const ttl = Math.min(settings.ttl, settings.maxHold);
    const signal = settings.signal;
    const shape = settings.shape;
    let watch: ReleaseWatch | undefined;
    let acquired = false;
    /** A writer whose intent is recorded on the key (new readers queue behind it): withdrawn at the end. */
    let queued = false;
    /** Granted with room left for another holder: the wake-up goes on to the next waiter. */
    let vacant = false;
    /** Made when the caller first sleeps: it takes a release of this process directly (single-key mutex). */
    let offer: HandoverOffer | undefined;
    /**
     * An outcome this caller has without attempting: the one grant() already made, or a grant a release of
     * this process handed over while the caller slept.
     */
    let known = first;
    try {
      if (!known && !once && this.store.hasWaiters(names)) {
        // No barging: callers of this process already wait for these keys, so queue behind them.
        attempt.span = this.observer.waiting(settings.label, startedAt, keys.length);
        watch = await this.watchReleases(names, keys);
        offer = handoverOffer(attempt, ttl, this.closed, this.inFlight);
        known = await watch.next(
          Math.min(deadline - performance.now(), settings.ttl, MAX_TIMER_DELAY_MS),
          signal,
          false,
          offer,
        );
      }
      for (;;) {
        let outcome: AcquireOutcome;
        let seenBefore = 0;
        /** This attempt is the caller's last: it ends the wait whatever it answers (see AcquireRequest.final). */
        let final = false;
        if (known) {
          outcome = known;
          known = undefined;
        } else {
          signal?.throwIfAborted();
          // Shutdown may have begun while this caller slept or its attempt was in flight: it is refused,
          // never left attempting (a borrowed client stays open) nor subscribing after the store closed.
          if (this.closed()) throw new LockUnavailableError(keys, SHUTTING_DOWN);
          seenBefore = watch?.seen ?? 0;
          // A wake-up for the deadline may come a little early (timers): what is left then is not worth another.
          final = once || deadline - performance.now() < LAST_ATTEMPT_MARGIN_MS;
          outcome = await this.attempt({ keys: names, token: value, ttl, shape, queued, final }, keys);
        }
        if (outcome.acquired) {
          if (signal?.aborted) {
            await this.store.release(names, value, 0, shape).catch(() => undefined);
            signal.throwIfAborted();
          }
          acquired = true;
          vacant = outcome.vacant === true;
          return outcome;
        }
        if (outcome.queued) {
          queued = true;
          this.writerMarks.set(value, names[0]);
        }
        const now = performance.now();
        if (now >= deadline || final) {
          if (once) return null;
          throw new LockNotAcquiredError(keys, Math.max(0, outcome.retryAfter), now - startedAt, {
            wait: settings.wait,
            ...(shape?.kind === 'semaphore' ? { limit: shape.limit } : shape?.kind === 'read' ? { mode: 'read' } : {}),
            ...(outcome.byReaders === true && shape?.kind !== 'read' ? { heldBy: 'readers' } : {}),
          });
        }
        if (!watch) {
          // Subscribe, then try again at once: a release between the attempt and the subscription was not seen.
          attempt.span ??= this.observer.waiting(settings.label, startedAt, keys.length);
          watch = await this.watchReleases(names, keys);
          continue;
        }
        // A release seen meanwhile may have come after this attempt reached the nodes: attempt again at once,
        // unless it can have freed nothing for this attempt or is another waiter's to attempt for (see
        // releasedSince). Every waiter of the process whose attempt was in flight sees the same release: were they
        // all to attempt again, none would ever sleep, and a busy key would keep them attempting in step, all but
        // one refused, for each grant, while the other processes' waiters lose every race.
        // `queued`, not the answer's own flag: a queued writer refused by another writer's lease stays queued.
        if (watch.releasedSince(seenBefore, { refusedBy: outcome.refusedBy, queued })) continue;
        // 0 is a lease ending within the millisecond (PTTL rounds down), not an unknown end: woken at its
        // expiry, a waiter could otherwise read 0 and sleep a whole ttl while the key is free.
        let fallback = outcome.retryAfter >= 0 ? Math.max(1, outcome.retryAfter) : settings.ttl;
        // A writer's "waiting" mark lasts one of its ttl, and each attempt renews it: a writer sleeping until
        // the readers' longer leases end would let it lapse, and new readers in ahead of it.
        if (queued) fallback = Math.min(fallback, ttl / 3);
        const jitter = Math.random() * Math.min(50, fallback / 10 + 1);
        // A queued writer keeps attempting itself: each attempt renews its mark.
        offer ??= handoverOffer(attempt, ttl, this.closed, this.inFlight);
        // With refusedBy, a release of the refusing grant that reaches a lagging node only now wakes it too.
        known = await watch.next(
          Math.min(deadline - now, fallback + jitter, MAX_TIMER_DELAY_MS),
          signal,
          queued,
          queued ? undefined : offer,
          outcome.refusedBy,
        );
      }
    } finally {
      watch?.close({ acquired, roomLeft: vacant, alone: shape?.kind !== 'semaphore' && shape?.kind !== 'read' });
      // Granted: the intent has done its job. Given up: the readers it kept waiting are told, as by a release.
      // Unless shutdown already withdrew it (and cleared the marks): a second withdrawal would announce again.
      if (queued && this.writerMarks.delete(value)) {
        void this.inFlight.track(this.store.withdraw(names[0], value, !acquired).catch(() => undefined));
      }
    }
  }

  /**
   * One attempt on the store, tracked so that shutdown lets it finish before closing the store: an attempt
   * Redis grants after shutdown began is taken back here, while the store still accepts the release (before,
   * the closed store refused it and the key stayed locked for nobody for a whole ttl).
   */
  private attempt(request: AcquireRequest, keys: readonly string[]): Promise<AcquireOutcome> {
    return this.inFlight.track(
      // A plain callback, not an async one: on the hot path (granted, not closing) the outcome passes as it is.
      this.store
        .acquire(request)
        .then((outcome) => (!outcome.acquired || !this.closed() ? outcome : this.takeBack(request, keys))),
    );
  }

  /** A grant that arrived after shutdown began: released again, and refused. */
  private async takeBack(request: AcquireRequest, keys: readonly string[]): Promise<never> {
    await this.store.release(request.keys, request.token, 0, request.shape).catch(() => undefined);
    throw new LockUnavailableError(keys, SHUTTING_DOWN);
  }

  private async watchReleases(names: readonly LockKeyNames[], keys: readonly string[]): Promise<ReleaseWatch> {
    if (this.closed()) throw new LockUnavailableError(keys, SHUTTING_DOWN);
    const watch = this.store.watch(names);
    try {
      await watch.ready();
    } catch (error) {
      watch.close();
      throw error instanceof LockUnavailableError
        ? new LockUnavailableError(keys, 'subscribing to release announcements failed', { cause: error })
        : error;
    }
    return watch;
  }

  private async unpin(leases: readonly Lease[]): Promise<void> {
    await Promise.all(leases.map((lease) => this.letGo(lease).catch(() => false)));
  }

  /** Never throws (Lease.release does not): a rejection, so the callers' Promise.all and catch see it. */
  private letGo(lease: Lease): Promise<boolean> {
    lease.holds--;
    if (lease.holds > 0) return Promise.resolve(lease.isHeld);
    return lease.release();
  }
}
