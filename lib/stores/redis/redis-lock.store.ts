// The lock store on one Redis deployment: each LockStore operation as one script on the node, its failures as lock
// errors.
import { LockError, LockUnavailableError } from '../../errors';
import { ReplicasNotAcknowledgedError } from '../../errors/replicas-not-acknowledged.error';
import { StoreClosedError } from '../../errors/store-closed.error';
import type { StoreHealth } from '../store-health';
import type { RedisConnection } from '../../options/lock-options.interface';
import type {
  AcquireOutcome,
  AcquireRequest,
  LockKeyNames,
  LockShape,
  LockState,
  LockStore,
} from '../lock-store.interface';
import { probe } from '../shared/health-probe';
import { isPermit, kindOf } from '../shared/lock-shapes';
import { RedisStoreBase } from '../shared/redis-store-base';
import type { HandoverClaim } from '../shared/release-channel';
import { storeUnavailable } from '../shared/store-unavailable';
import { type RedisStoreOptions, leaseTtl } from '../shared/timing';
import type { NodeAcquireReply } from './node-replies';
import { RedisLockNode } from './redis-lock-node';

/**
 * Leases on one Redis deployment (standalone, Sentinel or Cluster): one script round trip to acquire,
 * extend or release. Validity is counted from before the request was sent, minus clock drift, on the
 * monotonic clock.
 */
export class RedisLockStore extends RedisStoreBase implements LockStore {
  readonly kind = 'redis';
  private readonly node: RedisLockNode;

  constructor(connection: RedisConnection, options: RedisStoreOptions) {
    super(options);
    this.node = new RedisLockNode(connection, { label: 'redis', minReplicas: options.minReplicas });
    this.node.onRelease((channel, token) => this.hub.announce(channel, token));
  }

  protected subscribeReleases(channel: string): Promise<void> {
    return this.node.subscribe(channel, this.timeout(undefined)).catch((error: unknown) => {
      throw this.unavailable(error, [], 'subscribe to releases');
    });
  }

  protected unsubscribeReleases(channel: string): Promise<void> {
    return this.node.unsubscribe(channel);
  }

  acquire(request: AcquireRequest): Promise<AcquireOutcome> {
    // Callbacks, not awaits: the hot path of every lock, where each promise layer costs.
    const ttl = leaseTtl(request.ttl);
    const startedAt = performance.now();
    const timeout = this.timeout(ttl);
    let sent: Promise<NodeAcquireReply>;
    try {
      sent = this.node.acquire(request, timeout);
    } catch (error) {
      // As a rejection below: a command that may have gone out is taken back (none does today: the store
      // refuses synchronously only once closed).
      if (mayHaveRun(error))
        this.node.takeBack(request.keys, request.token, timeout, request.shape).catch(() => undefined);
      return Promise.reject(this.unavailable(error, request.keys, 'acquire'));
    }
    return sent.then(
      (reply): AcquireOutcome => {
        if (!reply.acquired) {
          return reply.readers === undefined
            ? { acquired: false, retryAfter: reply.retryAfter, queued: reply.queued }
            : { acquired: false, retryAfter: reply.retryAfter, queued: reply.queued, byReaders: true };
        }
        const validUntil = this.timing.validUntil(startedAt, ttl);
        if (validUntil <= performance.now()) {
          // The answer came too late for the lease (a stalled event loop, a slow network): it may already
          // have expired and been granted again. Never hand it out; taken back as a release (see takeBack).
          this.node.takeBack(request.keys, request.token, timeout, request.shape).catch(() => undefined);
          throw new LockUnavailableError(
            request.keys.map((key) => key.name),
            `Redis answered after the lease's validity (ttl ${ttl} ms minus drift) had passed`,
          );
        }
        return { acquired: true, fences: reply.fences, validUntil, vacant: reply.vacant };
      },
      (error: unknown) => {
        if (mayHaveRun(error)) {
          // The script may have run, or may still run, although no answer came: a timeout, or the driver
          // giving up on a command it had sent (a reset connection, MaxRetriesPerRequestError). Take back
          // whatever it granted under this token, or the key would stay locked for nobody for a whole ttl, and
          // announce it like a release: an attempt it refused meanwhile would sleep until its lease's end.
          this.node.takeBack(request.keys, request.token, timeout, request.shape).catch(() => undefined);
        }
        throw this.unavailable(error, request.keys, 'acquire');
      },
    );
  }

  async extend(request: AcquireRequest): Promise<number | null> {
    const ttl = leaseTtl(request.ttl);
    const startedAt = performance.now();
    try {
      const extended = await this.node.extend(request, this.timeout(ttl));
      const validUntil = this.timing.validUntil(startedAt, ttl);
      // A renewal answered after its own validity ended proves nothing about now: the lease is lost.
      return extended && validUntil > performance.now() ? validUntil : null;
    } catch (error) {
      throw this.unavailable(error, request.keys, 'extend');
    }
  }

  async release(keys: readonly LockKeyNames[], token: string, holdFor = 0, shape?: LockShape): Promise<boolean> {
    // A single-key mutex let go at once (no minHold left) goes straight to a waiter of this process that
    // offered to take it. Not with minReplicas: the grant would need its own WAIT.
    if (keys.length === 1 && holdFor <= 0 && !isPermit(shape) && !this.options.minReplicas) {
      const claim = this.hub.claim(keys[0].channel);
      if (claim) return this.handOver(keys[0], token, claim);
    }
    let released: Promise<number>;
    try {
      released = this.node.release(
        { keys, token, holdFor, shape, announce: this.hub.watched(keys) },
        this.timeout(undefined),
      );
    } catch (error) {
      // Refused before sending (the store closed).
      throw this.unavailable(error, keys, 'release');
    }
    // The release is now queued on the connection: a local waiter woken here sends its attempt on the
    // same connection right behind it, so Redis runs that attempt just after the delete — a handover in
    // one round trip. The PUBLISH of this release (announced, since this process watches the key) carries
    // the same token, and the hub counts it once.
    // Not for a hold-over (minHold): the key stays held, and its PUBLISH (where a waiter was refused, or with
    // this process watching) tells the waiters how long.
    if (holdFor <= 0) for (const key of keys) this.hub.handOver(key.channel, token);
    // A callback, not an await: one promise layer less on the hot path.
    return released.then(
      (count) => count === keys.length,
      (error: unknown) => {
        throw this.unavailable(error, keys, 'release');
      },
    );
  }

  /**
   * Releases `key` and grants it to the claimed waiter in one script (see HANDOVER_SCRIPT), its validity
   * counted as an acquire's: from before sending, minus drift. The claim is always settled: declined when
   * nothing was handed over, when the answer came too late to vouch for the lease, or on an error, and
   * the waiter then attempts itself. A hand-over answered too late, or maybe run unanswered, is taken back
   * first, like such an acquire: the waiter may leave without attempting (cancelled, or shutdown began),
   * and the key would stay locked for nobody. The take-back goes out before the waiter's attempt.
   */
  private async handOver(key: LockKeyNames, token: string, claim: HandoverClaim): Promise<boolean> {
    const ttl = leaseTtl(claim.ttl);
    const startedAt = performance.now();
    const timeout = this.timeout(ttl);
    let settled = false;
    try {
      const reply = await this.node.handOver(key, token, claim.token, ttl, timeout);
      if (!reply.handedOver) return reply.released;
      // Only this process listens for the key's releases (its own subscriber): nobody elsewhere waits, so
      // there is nobody to be fair to, and the local budget starts again. Not on a Cluster, where a process
      // may listen through another node (PUBSUB NUMSUB counts one node's subscribers).
      // (-1: PUBSUB refused, e.g. by an ACL: not known, so the budget stays.)
      if (reply.subscribers >= 0 && reply.subscribers <= 1 && !this.node.isCluster)
        this.hub.nobodyElseWaits(key.channel);
      const validUntil = this.timing.validUntil(startedAt, ttl);
      if (validUntil > performance.now()) {
        settled = true;
        claim.grant({ acquired: true, fences: [reply.fence], validUntil });
      } else {
        this.node.undo([key], claim.token, timeout).catch(() => undefined);
      }
      return true;
    } catch (error) {
      if (mayHaveRun(error)) this.node.undo([key], claim.token, timeout).catch(() => undefined);
      throw this.unavailable(error, [key], 'release');
    } finally {
      if (!settled) claim.decline();
    }
  }

  async withdraw(key: LockKeyNames, token: string, announce: boolean): Promise<void> {
    try {
      await this.node.withdraw(key, token, this.timeout(undefined), { announce });
    } catch (error) {
      throw this.unavailable(error, [key], 'withdraw');
    }
  }

  async isLocked(key: LockKeyNames): Promise<boolean> {
    try {
      return await this.node.exists(key, this.timeout(undefined));
    } catch (error) {
      throw this.unavailable(error, [key], 'isLocked');
    }
  }

  async ping(): Promise<void> {
    try {
      await this.node.ping(this.timeout(undefined));
    } catch (error) {
      throw this.unavailable(error, [], 'ping');
    }
  }

  async inspect(key: LockKeyNames): Promise<LockState | null> {
    try {
      const state = await this.node.inspect(key, this.timeout(undefined));
      return state && { kind: kindOf(state.shape), holders: state.holders };
    } catch (error) {
      throw this.unavailable(error, [key], 'inspect');
    }
  }

  async forceRelease(key: LockKeyNames): Promise<string[]> {
    try {
      return await this.node.forceRelease(key, this.timeout(undefined));
    } catch (error) {
      throw this.unavailable(error, [key], 'forceRelease');
    }
  }

  async health(): Promise<StoreHealth> {
    const pinged = await probe(() => this.node.ping(this.timeout(undefined)));
    if (pinged.ok) return { up: true, latencyMs: pinged.latencyMs };
    const unavailable = this.unavailable(pinged.error, [], 'ping');
    return { up: false, message: unavailable.message, error: unavailable };
  }

  async close(): Promise<void> {
    this.hub.clear();
    await this.node.close();
  }

  /** A lock error as it is (the caller's mistake, a verdict of the store's); anything else as LockUnavailableError. */
  private unavailable(error: unknown, keys: readonly LockKeyNames[], operation: string): LockError {
    if (error instanceof LockError) return error;
    return storeUnavailable(keys, operation, `Redis (${this.node.describeFailure(error)})`, { cause: error });
  }
}

/**
 * Whether an acquire that failed may have reached Redis: anything but this library's own verdicts (foreign
 * data at the key, a too-late answer already undone, a grant too few replicas acknowledged, undone by the
 * node) and a store closed before sending.
 */
function mayHaveRun(error: unknown): boolean {
  return (
    !(error instanceof LockError) &&
    !(error instanceof StoreClosedError) &&
    !(error instanceof ReplicasNotAcknowledgedError)
  );
}
