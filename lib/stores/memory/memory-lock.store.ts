import { LockUnavailableError } from '../../errors';
import type { StoreHealth } from '../../health/store-health';
import type { AcquireOutcome, AcquireRequest, LockKeyNames, LockState, LockStore, ReleaseWatch } from '../lock-store.interface';
import { ReleaseHub } from '../shared/release-hub';

interface Lease {
  readonly token: string;
  /** The grant's fence, for inspect. */
  readonly fence: number;
  expiresAt: number;
}

/**
 * Leases in a Map of this process: the same semantics as the Redis store (lease expiry, tokens, strictly
 * increasing fences, release announcements for waiters), correct only among callers of this one process.
 * One fence counter serves every key: strictly greater than any earlier grant of the same key, without a
 * counter per key left behind in memory.
 */
export class MemoryLockStore implements LockStore {
  readonly kind = 'memory';
  private readonly leases = new Map<string, Lease>();
  private fenceCounter = 0;
  private readonly hub = new ReleaseHub({ subscribe: async () => undefined, unsubscribe: async () => undefined }, 0);
  private readonly sweeper: NodeJS.Timeout;
  private closed = false;

  constructor(sweepIntervalMs = 30_000) {
    // Leases that expire without a release would otherwise stay in the map.
    this.sweeper = setInterval(() => this.sweepExpired(), sweepIntervalMs);
    this.sweeper.unref();
  }

  async acquire(request: AcquireRequest): Promise<AcquireOutcome> {
    if (this.closed) throw new LockUnavailableError(request.keys.map((key) => key.name), 'the lock store is closed');
    const now = performance.now();
    for (const key of request.keys) {
      const lease = this.live(key.lockKey, now);
      if (lease) return { acquired: false, retryAfter: Math.ceil(lease.expiresAt - now) };
    }
    const fences = request.keys.map((key) => {
      const fence = ++this.fenceCounter;
      this.leases.set(key.lockKey, { token: request.token, fence, expiresAt: now + request.ttl });
      return fence;
    });
    return { acquired: true, fences, validUntil: now + request.ttl };
  }

  async extend(request: AcquireRequest): Promise<number | null> {
    const now = performance.now();
    const leases = request.keys.map((key) => this.live(key.lockKey, now));
    if (leases.some((lease) => lease?.token !== request.token)) return null;
    for (const lease of leases) (lease as Lease).expiresAt = now + request.ttl;
    return now + request.ttl;
  }

  async release(keys: readonly LockKeyNames[], token: string, holdFor = 0): Promise<boolean> {
    const now = performance.now();
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
    return this.live(key.lockKey, performance.now()) !== undefined;
  }

  watch(keys: readonly LockKeyNames[]): ReleaseWatch {
    return this.hub.watch(keys);
  }

  hasWaiters(keys: readonly LockKeyNames[]): boolean {
    return this.hub.hasSleepers(keys);
  }

  async ping(): Promise<void> {
    return undefined;
  }

  async inspect(key: LockKeyNames): Promise<LockState | null> {
    const now = performance.now();
    const lease = this.live(key.lockKey, now);
    if (!lease) return null;
    return { kind: 'mutex', holders: [{ value: lease.token, ttlLeft: Math.ceil(lease.expiresAt - now), fence: lease.fence }] };
  }

  async forceRelease(key: LockKeyNames): Promise<string[]> {
    const lease = this.live(key.lockKey, performance.now());
    if (!lease) return [];
    this.leases.delete(key.lockKey);
    this.hub.announce(key.channel, lease.token);
    return [lease.token];
  }

  async health(): Promise<StoreHealth> {
    return this.closed ? { up: false, message: 'the lock store is closed' } : { up: true };
  }

  async close(): Promise<void> {
    this.closed = true;
    clearInterval(this.sweeper);
    this.hub.clear();
    this.leases.clear();
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

  private sweepExpired(): void {
    const now = performance.now();
    for (const [lockKey, lease] of this.leases) if (lease.expiresAt <= now) this.leases.delete(lockKey);
  }
}
