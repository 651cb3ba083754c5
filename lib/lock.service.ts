import { Inject, Injectable, Logger, type OnApplicationShutdown } from '@nestjs/common';
import type { Observable } from 'rxjs';
import { InvalidLockKeyError, LockLostError, LockNotAcquiredError, LockOptionsError, LockUnavailableError } from './errors';
import { SHUTTING_DOWN } from './errors/unavailable-details';
import { LockKeyNamer, normalizeKeys } from './keys';
import { HeldLock } from './lease/held-lock';
import { InFlight } from './lease/in-flight';
import { Lease } from './lease/lease';
import { checkReentry } from './lease/reentry';
import { RenewalScheduler } from './lease/renewal-scheduler';
import { randomToken } from './lease/token';
import { LOCK_OPTIONS, LOCK_STORE } from './lock.constants';
import type { Lock } from './lock.interface';
import { LockContext } from './lock-context';
import type { AcquireOptions, ResolvedLockOptions } from './lock-options.interface';
import { resolveCallSettings, type CallSettings } from './lock-options.resolver';
import { leaseValue, parseLeaseValue } from './observability/lease-owner';
import type { LockEvent } from './observability/lock-event';
import type { LockInfo } from './observability/lock-info';
import { LockObserver } from './observability/lock-observer';
import type { OtelSpan } from './observability/otel-api';
import type {
  AcquireGrant,
  AcquireOutcome,
  AcquireRequest,
  HandoverOffer,
  LockKeyNames,
  LockStore,
  ReleaseWatch,
} from './stores/lock-store.interface';
import { safeMessage } from './errors/safe-cause';

/** Every LockService of the process shares one view of which locks each async context holds. */
const context = new LockContext();

/** An attempt made with less than this left of the wait is the caller's last (see grantWaiting). */
const LAST_ATTEMPT_MARGIN_MS = 2;

/** How long shutdown waits for held locks to be released before closing the store anyway. */
const SHUTDOWN_RELEASE_TIMEOUT_MS = 2_000;

/** Longest single sleep: Node's timers overflow past 2^31 - 1 ms. */
const MAX_SLEEP_MS = 2_147_483_647;

type Granted = AcquireGrant;

/**
 * One acquisition call that needs a grant: what it asks for, and for its observer when it started and its
 * wait span once it had to wait.
 */
interface Attempt {
  /** The Redis names of the keys this call must be granted (those reentrancy did not cover). */
  readonly names: readonly LockKeyNames[];
  /** The lease value the grant is made to (token and instance). */
  readonly value: string;
  readonly settings: CallSettings;
  /** Every key of the call, as the caller gave them (for errors and events). */
  readonly keys: readonly string[];
  /** tryAcquire: a single attempt. */
  readonly once: boolean;
  readonly startedAt: number;
  span: OtelSpan | undefined;
  /**
   * Set once a release of this process claimed the caller for a direct hand-over: ends the hand-over's
   * in-flight count, called once the call has dealt with what came of it (see HandoverOffer.claimed).
   */
  handoverDealtWith?: () => void;
}

/**
 * Mutual exclusion on named keys, across processes when the store is Redis. See the README for the
 * guarantees and the contract of each public method.
 */
@Injectable()
export class LockService implements OnApplicationShutdown {
  // The members marked @internal serve the module's own parts (a Lease's host, the interceptor) and are left
  // out of the published types, so they stay out of an application's autocomplete. LockService is a LeaseHost
  // by shape only: an `implements` clause would have to name them in the published types.
  /** @internal */
  readonly logger = new Logger(LockService.name);
  /** @internal */
  readonly scheduler = new RenewalScheduler();
  /** @internal */
  readonly store: LockStore;
  private readonly namer: LockKeyNamer;
  private readonly held = new Set<Lease>();
  private readonly inFlight = new InFlight();
  /** Writers of this service waiting behind readers, by lease value: the key their "waiting" mark is on. */
  private readonly writerMarks = new Map<string, LockKeyNames>();
  private readonly observer: LockObserver;
  private closed = false;
  /** This service's holders evicted by its own forceRelease: its warning already tells of their loss. */
  private readonly forceReleased = new WeakSet<Lease>();

  constructor(
    @Inject(LOCK_OPTIONS) private readonly options: ResolvedLockOptions,
    @Inject(LOCK_STORE) store: LockStore,
  ) {
    this.store = store;
    this.namer = new LockKeyNamer(options.keyPrefix);
    this.observer = new LockObserver(options.instance, store.kind);
  }

  /**
   * Every acquired, released, busy, lost and unavailable of this service: hot, never erroring, completed
   * at shutdown. Nothing is built while nobody subscribes.
   */
  get events(): Observable<LockEvent> {
    return this.observer.events;
  }

  /** Waits up to `wait` for the keys; LockNotAcquiredError when still busy, LockUnavailableError when unreachable. */
  acquire(key: string | readonly string[], options?: AcquireOptions): Promise<Lock> {
    return this.obtain(key, options, false) as Promise<Lock>;
  }

  /** One attempt: the lock, or null when a key is busy. */
  tryAcquire(key: string | readonly string[], options?: AcquireOptions): Promise<Lock | null> {
    return this.obtain(key, options, true);
  }

  /**
   * Runs `fn` holding the keys (renewed meanwhile) and always releases. Returns what `fn` returns and
   * rethrows what it throws, unchanged: a failed release afterwards is logged, never thrown over it.
   */
  async withLock<T>(key: string | readonly string[], fn: (lock: Lock) => T | Promise<T>, options?: AcquireOptions): Promise<T> {
    // Checked before the lock is taken, like every other argument: not a TypeError once it is held.
    if (typeof fn !== 'function') throw new LockOptionsError('fn', fn, 'a function to run while holding the lock');
    const lock = await this.acquire(key, options);
    try {
      return await this.runWithLock(lock, () => fn(lock));
    } finally {
      await this.releaseQuietly(lock);
    }
  }

  async isLocked(key: string): Promise<boolean> {
    if (typeof key !== 'string') throw new InvalidLockKeyError(key, 'isLocked takes one key, a string');
    const [name] = normalizeKeys(key);
    return this.store.isLocked(this.namer.names(name));
  }

  /** Who holds `key` (null when free): each holder's instance, remaining lease and fence; the token only for this service's own. */
  async inspect(key: string): Promise<LockInfo | null> {
    if (typeof key !== 'string') throw new InvalidLockKeyError(key, 'inspect takes one key, a string');
    const [name] = normalizeKeys(key);
    const state = await this.store.inspect(this.namer.names(name));
    if (!state) return null;
    const holders = state.holders.map(({ value, ttlLeft, fence }) => {
      const { instance } = parseLeaseValue(value);
      const own = this.leaseWith(value);
      return own ? { instance, token: own.token, ttlLeft, fence } : { instance, ttlLeft, fence };
    });
    return { key: name, kind: state.kind, holders };
  }

  /**
   * An operator's tool for a stuck lock: deletes every lease on `key` whoever holds it and announces the
   * release (waiters wake). A holder in this service loses it at once (its signal aborts); one elsewhere at
   * its next renewal. The next grant's fence is greater, so a fenced resource refuses the evicted holder.
   * true when something was deleted.
   */
  async forceRelease(key: string): Promise<boolean> {
    if (typeof key !== 'string') throw new InvalidLockKeyError(key, 'forceRelease takes one key, a string');
    const [name] = normalizeKeys(key);
    const evicted = await this.store.forceRelease(this.namer.names(name));
    if (evicted.length === 0) return false;
    const instances = [...new Set(evicted.map((value) => parseLeaseValue(value).instance))];
    const own = evicted.map((value) => this.leaseWith(value)).filter((lease) => lease !== undefined);
    let ownLost = '';
    if (own.length === 1) ownLost = " This service's holder lost it now (its signal aborted).";
    else if (own.length > 1) ownLost = ` This service's ${own.length} holders lost it now (their signals aborted).`;
    const elsewhere =
      own.length < evicted.length ? ' A holder elsewhere learns it at its next renewal; until then only a fenced resource refuses its writes' : '';
    this.logger.warn(`Force-released the lock on "${name}": evicted ${instances.join(', ')} (from ${this.options.instance}).${ownLost}${elsewhere}`);
    // One warning for one operator action: the holders here are named above, not warned of again as losses
    // (their 'lost' events and metrics still count them). Marked by lease, not by a flag around the loop: the
    // abort listeners and 'lost' subscribers it runs may end another lease of this service, which still warns.
    for (const lease of own) this.forceReleased.add(lease);
    for (const lease of own) lease.revoke(`it was force-released (forceRelease("${name}"))`);
    return true;
  }

  /** The innermost lock held by the calling async context, or undefined. */
  current(): Lock | undefined {
    return context.current();
  }

  /** @internal LockTesting: this service's leases that still hold `key` (the locks loseHeld makes lost). */
  leasesOn(key: string): Lease[] {
    return [...this.held].filter((lease) => lease.keys.includes(key) && lease.isHeld);
  }

  /** @internal Runs `fn` with `lock` as the calling context's current lock (for @Locked and withLock). */
  runWithLock<T>(lock: Lock, fn: () => T): T {
    if (!(lock instanceof HeldLock)) {
      throw new LockOptionsError('lock', lock, 'a Lock obtained from this LockService');
    }
    return context.run(lock, fn);
  }

  /** @internal Releases; a failure is logged, never thrown (the caller's own result must not be replaced). */
  async releaseQuietly(lock: Lock): Promise<void> {
    try {
      const released = await lock.release();
      if (!released && !lock.signal.aborted) {
        this.logger.warn(`Lock on ${lock.keys.join(', ')} had already ended when released`);
      }
    } catch (error) {
      this.logger.error(`Releasing the lock on ${lock.keys.join(', ')} failed: ${safeMessage(error)}`);
    }
  }

  /** @internal LeaseHost: `work` goes on without a caller (a lost lease's deletion); shutdown waits for it. */
  inBackground(work: Promise<unknown>): void {
    void this.inFlight.track(work);
  }

  /** @internal LeaseHost: a lease ended (released or lost). */
  ended(lease: Lease): void {
    this.held.delete(lease);
    const lostBecause = lease.lostBecause;
    // A loss is logged once, beside the 'lost' event: code still running under the lock is now unprotected, and
    // a @Locked handler's own result still reaches its caller (unless it checks lock.signal). Not at shutdown,
    // where this service revokes every lock it holds itself, nor for this service's own forceRelease.
    if (lostBecause !== undefined && !this.closed && !this.forceReleased.has(lease)) {
      const label = lease.terms.label === undefined ? '' : ` (${lease.terms.label})`;
      const heldMs = Math.round(performance.now() - lease.terms.grantedAt);
      this.logger.warn(`Lock on ${lease.keys.join(', ')}${label} lost after ${heldMs} ms held: ${lostBecause}`);
    }
    this.observer.ended(lease.keys, lease.terms.label, lease.terms.grantedAt, lostBecause);
  }

  /** Stops renewals, releases every lock still held, and closes what the store opened. */
  async onApplicationShutdown(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    const leases = [...this.held];
    this.scheduler.clear();
    if (leases.length > 0) {
      this.logger.log(`Releasing ${leases.length} held lock(s) on shutdown`);
      // Revoked first: code still running under these locks sees its signal abort before another
      // instance can take the keys.
      for (const lease of leases) lease.revoke(SHUTTING_DOWN);
      // Revoked, they are lost leases: release() answers at once, their deletions tracked in inFlight (waited
      // for below), except where callers of this process wait for the key (answered after the deletion).
      const releases = Promise.allSettled(leases.map((lease) => lease.release()));
      await Promise.race([releases, sleep(SHUTDOWN_RELEASE_TIMEOUT_MS)]);
    }
    // Writers still waiting withdraw their marks now, while the store accepts it (their own withdrawal would
    // come after it closed, and other instances' readers would wait a writer's ttl for nothing).
    for (const [value, name] of this.writerMarks) void this.inFlight.track(this.store.withdraw(name, value, true).catch(() => undefined));
    this.writerMarks.clear();
    // Attempts already sent may still be granted: they take their grant back before the store closes.
    await Promise.race([this.inFlight.settled(), sleep(SHUTDOWN_RELEASE_TIMEOUT_MS)]);
    try {
      await this.store.close();
    } finally {
      // Subscribers (a log shipper, a test awaiting the end) complete even when closing the store failed.
      this.observer.complete();
    }
  }

  private async obtain(key: unknown, options: AcquireOptions | undefined, once: boolean): Promise<HeldLock | null> {
    const keys = normalizeKeys(key);
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
    if (this.closed) throw new LockUnavailableError(keys, SHUTTING_DOWN);

    const borrowed: Lease[] = [];
    let missing = keys;
    if (settings.reentrant) {
      missing = [];
      for (const name of keys) {
        const lease = context.leaseFor(name, this);
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
        let granted: Granted | null;
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
        if (this.closed || !borrowed.every((lease) => lease.isHeld)) {
          // Shutdown began, or a borrowed lease was lost, while this call waited: nothing may be handed out.
          await this.inFlight.track(this.store.release(names, value, 0, shape).catch(() => undefined));
          await this.unpin(borrowed);
          const error = this.closed
            ? new LockUnavailableError(keys, SHUTTING_DOWN)
            : new LockLostError(keys, 'a lock this context already held on some of the keys was lost meanwhile');
          this.observer.notAcquired(keys, settings.label, attempt.startedAt, error, attempt.span);
          throw error;
        }
        const grantedAt = performance.now();
        own = new Lease(this, {
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
        this.held.add(own);
        this.observer.acquired(missing, granted.fences, settings.label, attempt.startedAt, attempt.span);
      } finally {
        // A grant handed over while shutdown began is released (tracked) or held (in `held`) by now.
        attempt.handoverDealtWith?.();
      }
    }
    return new HeldLock(keys, own ? [...borrowed, own] : borrowed, (lease) => this.letGo(lease));
  }

  /**
   * Attempts until granted or `wait` runs out (`once`: a single attempt, null when busy). Between attempts the caller sleeps on the store's release
   * announcements (no polling), with a fallback wake-up when the holder's lease would expire (expiry is
   * not announced) plus random jitter, so waiters of several processes do not retry in step.
   */
  private grant(attempt: Attempt): Promise<Granted | null> {
    // The first attempt without the waiting loop's async frame (the hot path of every lock): nobody of
    // this process waits for these keys, the caller is not cancelled, shutdown has not begun. Anything but
    // a clean grant goes on in the loop, which starts from this outcome.
    const { names, value, settings, keys, once } = attempt;
    const signal = settings.signal;
    if (this.closed || signal?.aborted || (!once && this.store.hasWaiters(names))) return this.grantWaiting(attempt, undefined);
    const ttl = Math.min(settings.ttl, settings.maxHold);
    const final = once || settings.wait <= 0;
    return this.attempt({ keys: names, token: value, ttl, shape: settings.shape, queued: false, final }, keys).then((outcome) =>
      outcome.acquired && !signal?.aborted ? outcome : this.grantWaiting(attempt, outcome),
    );
  }

  /** The waiting loop of grant(); `first`: the outcome of an attempt already made, or undefined to start afresh. */
  private async grantWaiting(attempt: Attempt, first: AcquireOutcome | undefined): Promise<Granted | null> {
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
        offer = this.handoverOffer(attempt, ttl);
        known = await watch.next(Math.min(deadline - performance.now(), settings.ttl, MAX_SLEEP_MS), signal, false, offer);
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
          if (this.closed) throw new LockUnavailableError(keys, SHUTTING_DOWN);
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
        // unless it was of no grant that held the key when the nodes refused the attempt (see refusedBy). Every
        // waiter of the process whose attempt was in flight sees the same release: were they all to attempt
        // again, none would ever sleep, and a hot key would keep them attempting in step, 8 or so attempts
        // (and their undos) for each grant, while the other processes' waiters lose every race.
        if (watch.releasedSince(seenBefore, outcome.refusedBy)) continue;
        // 0 is a lease ending within the millisecond (PTTL rounds down), not an unknown end: woken at its
        // expiry, a waiter could otherwise read 0 and sleep a whole ttl while the key is free.
        let fallback = outcome.retryAfter >= 0 ? Math.max(1, outcome.retryAfter) : settings.ttl;
        // A writer's "waiting" mark lasts one of its ttl, and each attempt renews it: a writer sleeping until
        // the readers' longer leases end would let it lapse, and new readers in ahead of it.
        if (queued) fallback = Math.min(fallback, ttl / 3);
        const jitter = Math.random() * Math.min(50, fallback / 10 + 1);
        // A queued writer keeps attempting itself: each attempt renews its mark.
        offer ??= this.handoverOffer(attempt, ttl);
        // With refusedBy, a release of the refusing grant that reaches a lagging node only now wakes it too.
        known = await watch.next(
          Math.min(deadline - now, fallback + jitter, MAX_SLEEP_MS),
          signal,
          queued,
          queued ? undefined : offer,
          outcome.refusedBy,
        );
      }
    } finally {
      watch?.close(acquired, vacant);
      // Granted: the intent has done its job. Given up: the readers it kept waiting are told, as by a release.
      // Unless shutdown already withdrew it (and cleared the marks): a second withdrawal would announce again.
      if (queued && this.writerMarks.delete(value)) {
        void this.inFlight.track(this.store.withdraw(names[0], value, !acquired).catch(() => undefined));
      }
    }
  }

  /**
   * What a sleeping single-key mutex caller offers a release of this process: to be handed the lock
   * directly (see HandoverOffer), as long as the service is not shutting down (a cancelled caller has
   * already left the queue). From a claim until the call has dealt with its outcome, the hand-over counts
   * as in flight.
   */
  private handoverOffer(attempt: Attempt, ttl: number): HandoverOffer | undefined {
    const shape = attempt.settings.shape;
    if (attempt.names.length !== 1 || (shape !== undefined && shape.kind !== 'mutex')) return undefined;
    return {
      token: attempt.value,
      ttl,
      accepts: () => !this.closed,
      claimed: () => {
        if (attempt.handoverDealtWith) return;
        void this.inFlight.track(
          new Promise<void>((resolve) => {
            attempt.handoverDealtWith = resolve;
          }),
        );
      },
      // Back to attempting (and maybe sleeping) like any waiter: shutdown must not wait on it.
      declined: () => {
        attempt.handoverDealtWith?.();
        attempt.handoverDealtWith = undefined;
      },
    };
  }

  /**
   * One attempt on the store, tracked so that shutdown lets it finish before closing the store: an attempt
   * Redis grants after shutdown began is taken back here, while the store still accepts the release (before,
   * the closed store refused it and the key stayed locked for nobody for a whole ttl).
   */
  private attempt(request: AcquireRequest, keys: readonly string[]): Promise<AcquireOutcome> {
    return this.inFlight.track(
      // A plain callback, not an async one: on the hot path (granted, not closing) the outcome passes as it is.
      this.store.acquire(request).then((outcome) => (!outcome.acquired || !this.closed ? outcome : this.takeBack(request, keys))),
    );
  }

  /** A grant that arrived after shutdown began: released again, and refused. */
  private async takeBack(request: AcquireRequest, keys: readonly string[]): Promise<never> {
    await this.store.release(request.keys, request.token, 0, request.shape).catch(() => undefined);
    throw new LockUnavailableError(keys, SHUTTING_DOWN);
  }

  private async watchReleases(names: readonly LockKeyNames[], keys: readonly string[]): Promise<ReleaseWatch> {
    if (this.closed) throw new LockUnavailableError(keys, SHUTTING_DOWN);
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

  /** This service's lease whose store value is `value`, if it still holds it. */
  private leaseWith(value: string): Lease | undefined {
    for (const lease of this.held) if (lease.terms.value === value) return lease;
    return undefined;
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

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms).unref());
}
