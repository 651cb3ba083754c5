// The in-process store (the default): leases, permits and fences in this process's memory, right within it only.
import { LockUnavailableError } from '../../errors';
import { STORE_CLOSED } from '../../errors/unavailable-details';
import type { StoreHealth } from '../store-health';
import type {
  AcquireOutcome,
  AcquireRequest,
  LockKeyNames,
  LockShape,
  LockState,
  LockStore,
  ReleaseWatch,
} from '../lock-store.interface';
import { kindConflict, kindOf } from '../shared/lock-shapes';
import { ReleaseHub } from '../shared/release-hub';
import { withdrawalMessage } from '../shared/withdrawal-message';

interface Lease {
  readonly token: string;
  /** The grant's fence, for inspect. */
  readonly fence: number;
  expiresAt: number;
}

/** A semaphore's permits or a read-write lock's readers: several holders of one key. */
interface PermitSet {
  readonly shape: Exclude<LockShape, { kind: 'mutex' }>;
  /** Holder token → its fence and expiry. */
  readonly holders: Map<string, { readonly fence: number; expiresAt: number }>;
}

/**
 * This process's access to the store cut off (LockTesting.makeUnavailable): its calls reject as a Redis store's
 * do while Redis is down. Set and lifted by the testing harness only.
 */
export interface MemoryStoreOutage {
  /** The detail of every LockUnavailableError raised meanwhile. */
  readonly detail: string;
  /**
   * Whether calls made with this lease value still get through: holders standing for other instances
   * (LockTesting.holdElsewhere), whose own connection to the store is not cut.
   */
  reaches(value: string): boolean;
}

/** A writer waiting behind readers (see RedisLockStore: the same protocol). */
interface Intent {
  readonly token: string;
  expiresAt: number;
}

/**
 * Leases in a Map of this process: the same semantics as the Redis store (lease expiry, tokens, strictly
 * increasing fences, release announcements for waiters), correct only among callers of this one process.
 * One fence counter serves every key: strictly greater than any earlier grant of the same key, without a
 * counter per key left behind in memory; and never below this host's clock in µs, so that the fences of a
 * process started again are above those of the one before (as the floor of every grant does it for Redis: see
 * NEXT_FENCE), for a resource fenced with both.
 */
export class MemoryLockStore implements LockStore {
  readonly kind = 'memory';
  private readonly leases = new Map<string, Lease>();
  private readonly permits = new Map<string, PermitSet>();
  private readonly intents = new Map<string, Intent>();
  private fenceCounter = 0;
  // Subscribing is refused during an outage, as a Redis subscriber connection is when Redis is down.
  private readonly hub = new ReleaseHub(
    { subscribe: async () => this.refuseIfCut([]), unsubscribe: async () => undefined },
    0,
  );
  private readonly sweeper: NodeJS.Timeout;
  private closed = false;
  private outage: MemoryStoreOutage | undefined;

  constructor(sweepIntervalMs = 30_000) {
    // Leases that expire without a release would otherwise stay in the map.
    this.sweeper = setInterval(() => this.sweepExpired(), sweepIntervalMs);
    this.sweeper.unref();
  }

  async acquire(request: AcquireRequest): Promise<AcquireOutcome> {
    if (this.closed)
      throw new LockUnavailableError(
        request.keys.map((key) => key.name),
        STORE_CLOSED,
      );
    this.refuseIfCut(request.keys, request.token);
    const now = performance.now();
    if (request.shape && request.shape.kind !== 'mutex') return this.acquirePermit(request, request.shape, now);
    for (const key of request.keys) {
      const lease = this.live(key.lockKey, now);
      if (lease) {
        if (request.queued && !request.final) this.intend(key, request, now);
        return { acquired: false, retryAfter: Math.ceil(lease.expiresAt - now) };
      }
      const set = this.livePermits(key.lockKey, now);
      if (set) {
        if (set.shape.kind === 'semaphore') throw kindConflict(key.name, set.shape, request.shape);
        // Readers hold it: a single-key writer records its intent, so new readers queue behind it.
        const latest = Math.max(...[...set.holders.values()].map((holder) => holder.expiresAt));
        const queued = request.keys.length === 1 && !request.final && this.intend(key, request, now);
        const retryAfter = Math.ceil(Math.min(latest - now, queued ? request.ttl / 3 : Infinity));
        // Said of one key only, as the Redis stores do: a writer of several keys stops at the first busy one, and
        // a writer may hold the others.
        return request.keys.length === 1
          ? { acquired: false, retryAfter, queued, byReaders: true }
          : { acquired: false, retryAfter, queued };
      }
    }
    const fences = request.keys.map((key) => {
      const fence = this.nextFence();
      this.leases.set(key.lockKey, { token: request.token, fence, expiresAt: now + request.ttl });
      return fence;
    });
    return { acquired: true, fences, validUntil: now + request.ttl };
  }

  /** The next fence: above the last one, and at least the wall clock in microseconds. */
  private nextFence(): number {
    const clock = Math.floor((performance.timeOrigin + performance.now()) * 1_000);
    this.fenceCounter = Math.max(this.fenceCounter + 1, clock);
    return this.fenceCounter;
  }

  /** A permit of a semaphore, or a reader: one more holder of the key, if the key admits one now. */
  private acquirePermit(
    request: AcquireRequest,
    shape: Exclude<LockShape, { kind: 'mutex' }>,
    now: number,
  ): AcquireOutcome {
    const key = request.keys[0];
    const lease = this.live(key.lockKey, now);
    if (lease) {
      if (shape.kind === 'semaphore') throw kindConflict(key.name, { kind: 'mutex' }, shape);
      return { acquired: false, retryAfter: Math.ceil(lease.expiresAt - now) };
    }
    let set = this.livePermits(key.lockKey, now);
    if (
      set &&
      (set.shape.kind !== shape.kind ||
        (shape.kind === 'semaphore' && set.shape.kind === 'semaphore' && set.shape.limit !== shape.limit))
    ) {
      throw kindConflict(key.name, set.shape, shape);
    }
    if (shape.kind === 'read') {
      const intent = this.liveIntent(key.lockKey, now);
      if (intent) return { acquired: false, retryAfter: Math.ceil(intent.expiresAt - now) };
    }
    const limit = shape.kind === 'semaphore' ? shape.limit : Infinity;
    if (set && set.holders.size >= limit) {
      const earliest = Math.min(...[...set.holders.values()].map((holder) => holder.expiresAt));
      return { acquired: false, retryAfter: Math.ceil(earliest - now) };
    }
    if (!set) {
      set = { shape, holders: new Map() };
      this.permits.set(key.lockKey, set);
    }
    const fence = this.nextFence();
    set.holders.set(request.token, { fence, expiresAt: now + request.ttl });
    return { acquired: true, fences: [fence], validUntil: now + request.ttl, vacant: set.holders.size < limit };
  }

  /** Records (or refreshes) a writer's intent on `key` unless another writer's is there: whether it is this one's. */
  private intend(key: LockKeyNames, request: AcquireRequest, now: number): boolean {
    const intent = this.liveIntent(key.lockKey, now);
    if (intent && intent.token !== request.token) return false;
    this.intents.set(key.lockKey, { token: request.token, expiresAt: now + request.ttl });
    return true;
  }

  async withdraw(key: LockKeyNames, token: string, announce: boolean): Promise<void> {
    this.refuseIfCut([key], token);
    if (this.intents.get(key.lockKey)?.token !== token) return;
    this.intents.delete(key.lockKey);
    if (announce) this.hub.announce(key.channel, withdrawalMessage(token));
  }

  async extend(request: AcquireRequest): Promise<number | null> {
    this.refuseIfCut(request.keys, request.token);
    const now = performance.now();
    if (request.shape && request.shape.kind !== 'mutex') {
      const holder = this.livePermits(request.keys[0].lockKey, now)?.holders.get(request.token);
      if (!holder) return null;
      holder.expiresAt = now + request.ttl;
      return now + request.ttl;
    }
    const leases = request.keys.map((key) => this.live(key.lockKey, now));
    if (leases.some((lease) => lease?.token !== request.token)) return null;
    for (const lease of leases) (lease as Lease).expiresAt = now + request.ttl;
    return now + request.ttl;
  }

  async release(keys: readonly LockKeyNames[], token: string, holdFor = 0, shape?: LockShape): Promise<boolean> {
    this.refuseIfCut(keys, token);
    const now = performance.now();
    if (shape && shape.kind !== 'mutex') {
      const key = keys[0];
      const set = this.livePermits(key.lockKey, now);
      const holder = set?.holders.get(token);
      if (!set || !holder) return false;
      // minHold not reached: the permit stays, under its token, until grant + minHold.
      if (holdFor > 0) holder.expiresAt = now + holdFor;
      else this.dropHolder(key.lockKey, set, token);
      this.hub.announce(key.channel, token);
      return true;
    }
    let all = true;
    for (const key of keys) {
      const lease = this.live(key.lockKey, now);
      if (lease?.token !== token) {
        all = false;
        continue;
      }
      // minHold not reached: the lease stays, under its token, until grant + minHold.
      if (holdFor > 0) lease.expiresAt = now + holdFor;
      else this.leases.delete(key.lockKey);
      this.hub.announce(key.channel, token);
    }
    return all;
  }

  async isLocked(key: LockKeyNames): Promise<boolean> {
    this.refuseIfCut([key]);
    const now = performance.now();
    return this.live(key.lockKey, now) !== undefined || this.livePermits(key.lockKey, now) !== undefined;
  }

  watch(keys: readonly LockKeyNames[]): ReleaseWatch {
    return this.hub.watch(keys);
  }

  hasWaiters(keys: readonly LockKeyNames[]): boolean {
    return this.hub.hasSleepers(keys);
  }
  wakeWaiters(): void {
    this.hub.wakeAll();
  }

  async ping(): Promise<void> {
    this.refuseIfCut([]);
  }

  async inspect(key: LockKeyNames): Promise<LockState | null> {
    this.refuseIfCut([key]);
    const now = performance.now();
    const set = this.livePermits(key.lockKey, now);
    if (set) {
      const holders = [...set.holders].map(([value, holder]) => ({
        value,
        ttlLeft: Math.ceil(holder.expiresAt - now),
        fence: holder.fence,
      }));
      return { kind: kindOf(set.shape), holders };
    }
    const lease = this.live(key.lockKey, now);
    if (!lease) return null;
    return {
      kind: 'mutex',
      holders: [{ value: lease.token, ttlLeft: Math.ceil(lease.expiresAt - now), fence: lease.fence }],
    };
  }

  async forceRelease(key: LockKeyNames): Promise<string[]> {
    this.refuseIfCut([key]);
    const set = this.livePermits(key.lockKey, performance.now());
    if (set) {
      this.permits.delete(key.lockKey);
      const evicted = [...set.holders.keys()];
      for (const token of evicted) this.hub.announce(key.channel, token);
      return evicted;
    }
    const lease = this.live(key.lockKey, performance.now());
    if (!lease) return [];
    this.leases.delete(key.lockKey);
    this.hub.announce(key.channel, lease.token);
    return [lease.token];
  }

  async health(): Promise<StoreHealth> {
    if (this.closed) return { up: false, message: STORE_CLOSED };
    // The message a Redis store gives when its PING fails: the error its callers get.
    if (this.outage) return { up: false, message: new LockUnavailableError([], this.outage.detail).message };
    return { up: true };
  }

  /**
   * @internal LockTesting: cuts this process's access off (every call rejects with LockUnavailableError, except
   * those `outage` still lets through), or restores it (undefined). Leases keep expiring meanwhile, as in Redis.
   */
  setOutage(outage: MemoryStoreOutage | undefined): void {
    this.outage = outage;
  }

  /** @internal Whether access is cut off (see setOutage). */
  get cutOff(): boolean {
    return this.outage !== undefined;
  }

  async close(): Promise<void> {
    this.closed = true;
    clearInterval(this.sweeper);
    this.hub.clear();
    this.leases.clear();
    this.permits.clear();
    this.intents.clear();
  }

  /** Throws what a Redis store's callers get with Redis down, while access is cut off and `value` may not pass. */
  private refuseIfCut(keys: readonly LockKeyNames[], value?: string): void {
    const outage = this.outage;
    if (!outage || (value !== undefined && outage.reaches(value))) return;
    throw new LockUnavailableError(
      keys.map((key) => key.name),
      outage.detail,
    );
  }

  /** The lease on a key if it has not expired; an expired one is dropped on the way. */
  private live(lockKey: string, now: number): Lease | undefined {
    const lease = this.leases.get(lockKey);
    if (lease && lease.expiresAt <= now) {
      this.leases.delete(lockKey);
      return undefined;
    }
    return lease;
  }

  /**
   * The holders of a key held as permits, expired ones dropped on the way (so a crashed holder's permit is reclaimed);
   * undefined when none is left.
   */
  private livePermits(lockKey: string, now: number): PermitSet | undefined {
    const set = this.permits.get(lockKey);
    if (!set) return undefined;
    for (const [token, holder] of set.holders) if (holder.expiresAt <= now) set.holders.delete(token);
    if (set.holders.size > 0) return set;
    this.permits.delete(lockKey);
    return undefined;
  }

  private dropHolder(lockKey: string, set: PermitSet, token: string): void {
    set.holders.delete(token);
    if (set.holders.size === 0) this.permits.delete(lockKey);
  }

  private liveIntent(lockKey: string, now: number): Intent | undefined {
    const intent = this.intents.get(lockKey);
    if (intent && intent.expiresAt <= now) {
      this.intents.delete(lockKey);
      return undefined;
    }
    return intent;
  }

  private sweepExpired(): void {
    const now = performance.now();
    for (const [lockKey, lease] of this.leases) if (lease.expiresAt <= now) this.leases.delete(lockKey);
    for (const lockKey of [...this.permits.keys()]) this.livePermits(lockKey, now);
    for (const lockKey of [...this.intents.keys()]) this.liveIntent(lockKey, now);
  }
}
