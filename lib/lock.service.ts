/**
 * The public face of the module's locks: acquire, tryAcquire, withLock, inspection and forceRelease, the event
 * stream, and the lifecycle of what this service holds (its leases, shutdown). Acquiring itself is the
 * engine's job (engine/acquisition.ts).
 */
import { type BeforeApplicationShutdown, Inject, Injectable, Logger, type OnApplicationShutdown } from '@nestjs/common';
import type { Observable } from 'rxjs';
import { InvalidLockKeyError, LockOptionsError, LockUnavailableError } from './errors';
import { SHUTTING_DOWN } from './errors/unavailable-details';
import { safeMessage } from './errors/safe-cause';
import { Acquisition } from './engine/acquisition';
import { Campaign, type CampaignHost } from './engine/leader/campaign';
import type { LeaderInfo, Leadership, LeaderTerm } from './engine/leader/leader.interface';
import { isLeaderKey, leaderKey, LockKeyNamer, normalizeKeys } from './keys';
import { HeldLock } from './engine/lease/held-lock';
import { InFlight } from './engine/lease/in-flight';
import type { Lease } from './engine/lease/lease';
import { RenewalScheduler } from './engine/lease/renewal-scheduler';
import { LOCK_OPTIONS, LOCK_STORE } from './lock.constants';
import type { Lock } from './lock.interface';
import { LockContext } from './engine/lock-context';
import type { AcquireOptions, ResolvedLockOptions } from './options/lock-options.interface';
import { type LeaderOptions, leaderName, resolveLeaderSettings } from './options/leader-options';
import { parseLeaseValue } from './observability/lease-owner';
import type { LockEvent } from './observability/lock-event';
import type { LockInfo } from './observability/lock-info';
import { LockObserver } from './observability/lock-observer';
import type { LockStore } from './stores/lock-store.interface';

/** Every LockService of the process shares one view of which locks each async context holds. */
const context = new LockContext();

/** How long shutdown waits for held locks to be released before closing the store anyway. */
const SHUTDOWN_RELEASE_TIMEOUT_MS = 2_000;

/**
 * Mutual exclusion on named keys, across processes when the store is Redis. See docs/lock-service.md and
 * docs/guarantees.md for the guarantees and the contract of each public method.
 */
@Injectable()
export class LockService implements BeforeApplicationShutdown, OnApplicationShutdown {
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
  private readonly observer: LockObserver;
  private readonly acquisition: Acquisition;
  private closed = false;
  /** This service's holders evicted by its own forceRelease: its warning already tells of their loss. */
  private readonly forceReleased = new WeakSet<Lease>();
  /** Leaderships campaigning (lead, @Leader), until stopped. */
  private readonly campaigns = new Set<Campaign>();
  private readonly campaignHost: CampaignHost;

  constructor(
    @Inject(LOCK_OPTIONS) private readonly options: ResolvedLockOptions,
    @Inject(LOCK_STORE) store: LockStore,
  ) {
    this.store = store;
    this.namer = new LockKeyNamer(options.keyPrefix);
    this.observer = new LockObserver(options.instance, store.kind);
    this.acquisition = new Acquisition({
      host: this,
      store,
      options,
      namer: this.namer,
      observer: this.observer,
      context,
      inFlight: this.inFlight,
      closed: () => this.closed,
      adopt: (lease) => void this.held.add(lease),
    });
    this.campaignHost = {
      logger: this.logger,
      instance: options.instance,
      observer: this.observer,
      // The one way into the leaderships' namespace, which acquire() refuses.
      acquire: (key, acquireOptions) => this.acquisition.obtain(key, acquireOptions, false, true) as Promise<Lock>,
      runWithLock: (lock, fn) => this.runWithLock(lock, fn),
      releaseQuietly: (lock) => this.releaseQuietly(lock),
      closed: () => this.closed,
      ended: (campaign) => void this.campaigns.delete(campaign),
    };
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
    return this.acquisition.obtain(key, options, false) as Promise<Lock>;
  }

  /** One attempt: the lock, or null when a key is busy. */
  tryAcquire(key: string | readonly string[], options?: AcquireOptions): Promise<Lock | null> {
    return this.acquisition.obtain(key, options, true);
  }

  /**
   * Runs `fn` holding the keys (renewed meanwhile) and always releases. Returns what `fn` returns and
   * rethrows what it throws, unchanged: a failed release afterwards is logged, never thrown over it.
   */
  async withLock<T>(
    key: string | readonly string[],
    fn: (lock: Lock) => T | Promise<T>,
    options?: AcquireOptions,
  ): Promise<T> {
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

  /**
   * Campaigns for leadership `name` until `stop()` or shutdown: while this instance leads, `fn` runs with the
   * term (its `signal` aborts when the term ends); when `fn` returns or throws (logged), the instance resigns and
   * campaigns again, after the instances already waiting. The lease is renewed while `fn` runs.
   */
  lead(name: string, fn: (term: LeaderTerm) => unknown, options?: LeaderOptions): Leadership {
    const leadership = leaderName(name);
    if (typeof fn !== 'function') throw new LockOptionsError('fn', fn, 'a function to run while this instance leads');
    const settings = resolveLeaderSettings(this.options, options);
    if (this.closed) throw new LockUnavailableError([leaderKey(leadership)], SHUTTING_DOWN);
    const campaign = new Campaign(this.campaignHost, leadership, fn, settings);
    this.campaigns.add(campaign);
    return campaign;
  }

  /** Who leads `name` now, as the store says (null when nobody does): for operators. */
  async leader(name: string): Promise<LeaderInfo | null> {
    const leadership = leaderName(name);
    const state = await this.store.inspect(this.namer.names(leaderKey(leadership)));
    const holder = state?.holders[0];
    if (!holder) return null;
    const { instance } = parseLeaseValue(holder.value);
    return { name: leadership, instance, term: holder.fence, ttlLeft: holder.ttlLeft };
  }

  /** @internal The leaderships this service leads now (the health indicator's detail). */
  leading(): string[] {
    return [...this.campaigns].filter((campaign) => campaign.isLeader).map((campaign) => campaign.name);
  }

  /**
   * Who holds `key` (null when free): each holder's instance, remaining lease and fence; the token only for this
   * service's own.
   */
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
    // A leadership's key (only campaigns take keys in its namespace): its one holder is the leader, its fence the term.
    const kind = state.kind === 'mutex' && isLeaderKey(name) ? 'leader' : state.kind;
    return { key: name, kind, holders };
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
      own.length < evicted.length
        ? ' A holder elsewhere learns it at its next renewal; until then only a fenced resource refuses its writes'
        : '';
    this.logger.warn(
      `Force-released the lock on "${name}": evicted ${instances.join(', ')} ` +
        `(from ${this.options.instance}).${ownLost}${elsewhere}`,
    );
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

  /**
   * Leaderships end first, before the application's other shutdown hooks close what their work uses: each term
   * under way is told (its signal aborts) and, once its `fn` has returned, its lease is released so that
   * another instance takes over at once. An `fn` that does not return in time loses its lease below.
   */
  async beforeApplicationShutdown(): Promise<void> {
    const ending = Promise.all([...this.campaigns].map((campaign) => campaign.end('shutdown')));
    await Promise.race([ending, sleep(SHUTDOWN_RELEASE_TIMEOUT_MS)]);
  }

  /** Stops renewals, releases every lock still held, and closes what the store opened. */
  async onApplicationShutdown(): Promise<void> {
    if (this.closed) return;
    // Called alone (without the hook before it): leaderships are told before their leases are revoked.
    for (const campaign of this.campaigns) void campaign.end('shutdown');
    this.closed = true;
    // Waiters first: woken, each finds the service closed and is refused now, not after the releases below.
    this.store.wakeWaiters();
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
    this.acquisition.withdrawWriterMarks();
    // Attempts already sent may still be granted: they take their grant back before the store closes.
    await Promise.race([this.inFlight.settled(), sleep(SHUTDOWN_RELEASE_TIMEOUT_MS)]);
    try {
      await this.store.close();
    } finally {
      // Subscribers (a log shipper, a test awaiting the end) complete even when closing the store failed.
      this.observer.complete();
    }
  }

  /** This service's lease whose store value is `value`, if it still holds it. */
  private leaseWith(value: string): Lease | undefined {
    for (const lease of this.held) if (lease.terms.value === value) return lease;
    return undefined;
  }
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms).unref());
}
