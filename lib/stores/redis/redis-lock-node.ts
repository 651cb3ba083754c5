import { Logger } from '@nestjs/common';
import { InvalidLockKeyError } from '../../errors';
import type { MinReplicas, RedisConnection, RedlockNode } from '../../lock-options.interface';
import { type LockClient, type LockScript, type RedisArgument, createLockClient, lockScript } from '../clients';
import type { LockKeyNames } from '../lock-store.interface';
import { withTimeout } from '../shared/with-timeout';
import { ACQUIRE_SCRIPT, EXTEND_SCRIPT, RAISE_FENCES_SCRIPT, RELEASE_SCRIPT, UNDO_SCRIPT } from './lock-scripts';
import { FORCE_RELEASE_SCRIPT, INSPECT_SCRIPT } from './operator-scripts';
import { ReplicasNotAcknowledgedError } from './replicas-not-acknowledged.error';

/** The scripts, with their SHA; the names are what ioredis registers them as (namespaced, see LockScript). */
const ACQUIRE = lockScript('nestLockAcquire', ACQUIRE_SCRIPT);
const EXTEND = lockScript('nestLockExtend', EXTEND_SCRIPT);
const RELEASE = lockScript('nestLockRelease', RELEASE_SCRIPT);
const RAISE_FENCES = lockScript('nestLockRaiseFences', RAISE_FENCES_SCRIPT);
const UNDO = lockScript('nestLockUndo', UNDO_SCRIPT);
const INSPECT = lockScript('nestLockInspect', INSPECT_SCRIPT);
const FORCE_RELEASE = lockScript('nestLockForceRelease', FORCE_RELEASE_SCRIPT);

/** What one node holds at a lock's key (inspect). */
export interface NodeLockState {
  /** The lease's value, `<token>|<instance>`. */
  readonly value: string;
  /** PTTL: ms until it expires. */
  readonly ttlLeft: number;
  /** The key's fence counter on this node. */
  readonly fence: number;
}

/** One node's answer to an acquire attempt. */
export type NodeAcquireReply =
  | { readonly acquired: true; readonly fences: number[] }
  | {
      readonly acquired: false;
      readonly retryAfter: number;
      /** Token of the grant holding the key ('' when unknown). */
      readonly holder: string;
    };

/**
 * The lock scripts on one Redis deployment (a standalone server, a Sentinel-managed master or a Cluster),
 * through a LockClient of the module's own: made from a URL or options, or duplicated from a client the
 * user lent (which is never used for a command, nor closed). Release announcements arrive on a subscriber
 * connection duplicated from it on first use. close() closes both.
 *
 * Every command is bounded by a timeout; connection failures reject with the driver's error, which the
 * stores turn into LockUnavailableError; foreign data at a lock's keys is an InvalidLockKeyError.
 *
 * With `minReplicas`, every script that writes a lease (acquire, extend, the fence write-back) is followed
 * by `WAIT replicas timeout` in the same round trip, and the write counts only when enough replicas
 * acknowledged it: a grant they did not is released again, and a ReplicasNotAcknowledgedError rejects.
 */
export class RedisLockNode {
  private readonly logger = new Logger('LockStore');
  private readonly client: LockClient;
  private subscriber: LockClient | undefined;
  private messageHandler: ((channel: string, token: string) => void) | undefined;
  /** Set by close(): nothing is sent or opened afterwards (a lent client stays usable to its owner). */
  private closed = false;
  /** Whether the last command on the lock connection failed (see `failing`). */
  private lastFailed = false;

  constructor(
    connection: RedisConnection | RedlockNode,
    readonly label: string,
    private readonly minReplicas?: MinReplicas,
  ) {
    this.client = createLockClient(connection, label, this.logger);
  }

  get isCluster(): boolean {
    return this.client.isCluster;
  }

  /**
   * Whether the last command on this node failed (as a rule: down, unreachable, timed out; our scripts
   * answer foreign data with codes, not errors). A Redlock verdict taken before this node answered then
   * presumes it down rather than merely slower than the others.
   */
  get failing(): boolean {
    return this.lastFailed;
  }

  async acquire(keys: readonly LockKeyNames[], token: string, ttl: number, timeoutMs: number): Promise<NodeAcquireReply> {
    const names: string[] = [];
    for (const key of keys) names.push(key.lockKey);
    for (const key of keys) names.push(key.fenceKey);
    let reply: number[];
    try {
      reply = (await this.write(ACQUIRE, names, [token, ttl], timeoutMs, keys, (answer) => Number((answer as number[])[0]) === 1, 'grant')) as number[];
    } catch (error) {
      // Granted, but on too few replicas to survive a failover: take it back before saying so.
      if (error instanceof ReplicasNotAcknowledgedError) await this.undo(keys, token, timeoutMs).catch(() => undefined);
      throw error;
    }
    const status = Number(reply[0]);
    if (status === 1) return { acquired: true, fences: reply.slice(1).map(Number) };
    if (status === 0) return { acquired: false, retryAfter: Number(reply[1]), holder: String(reply[2] ?? '') };
    const key = keys[Number(reply[1]) - 1];
    throw new InvalidLockKeyError(
      key.name,
      `Redis key ${JSON.stringify(status === -1 ? key.lockKey : key.fenceKey)} holds data that is not this library's; ` +
        `choose another key or keyPrefix`,
    );
  }

  async extend(keys: readonly LockKeyNames[], token: string, ttl: number, timeoutMs: number): Promise<boolean> {
    const names = keys.map((key) => key.lockKey);
    // A renewal too few replicas saw does not count: the lease keeps the validity it had (and retries).
    const reply = await this.write(EXTEND, names, [token, ttl], timeoutMs, keys, (answer) => Number(answer) === 1, 'renewal');
    return Number(reply) === 1;
  }

  /**
   * Returns how many of the keys still held `token` and were released: deleted, or with `holdFor` > 0
   * left to expire in that many ms (minHold). No WAIT: a release that a failover loses only leaves a lease
   * to expire on its own, which delays the next holder and never admits two.
   */
  async release(keys: readonly LockKeyNames[], token: string, timeoutMs: number, holdFor = 0): Promise<number> {
    const names = keys.map((key) => key.lockKey);
    const args: RedisArgument[] = [token, Math.max(0, Math.ceil(holdFor))];
    for (const key of keys) args.push(key.channel);
    const reply = await this.run(RELEASE, names, args, timeoutMs, keys);
    return Number(reply);
  }

  /** Takes back an attempt that did not become a lock, silently (see UNDO_SCRIPT). */
  async undo(keys: readonly LockKeyNames[], token: string, timeoutMs: number): Promise<void> {
    await this.run(UNDO, keys.map((key) => key.lockKey), [token], timeoutMs, keys);
  }

  /**
   * Redlock's fence write-back: raises each key's fence counter on this node to at least `fences[i]`,
   * provided this node still holds every key with `token`. True when it did (or the counters were already
   * that high); false when the node no longer holds the lock.
   */
  async raiseFences(keys: readonly LockKeyNames[], token: string, fences: readonly number[], timeoutMs: number): Promise<boolean> {
    const names: string[] = [];
    for (const key of keys) names.push(key.lockKey);
    for (const key of keys) names.push(key.fenceKey);
    const reply = await this.write(RAISE_FENCES, names, [token, ...fences], timeoutMs, keys, (answer) => Number(answer) === 1, 'fence');
    if (Array.isArray(reply)) {
      const key = keys[Number(reply[1]) - 1];
      throw new InvalidLockKeyError(
        key.name,
        `Redis key ${JSON.stringify(key.fenceKey)} holds data that is not this library's; choose another key or keyPrefix`,
      );
    }
    return Number(reply) === 1;
  }

  /** The lease at `key` on this node, or null when there is none (see INSPECT_SCRIPT). */
  async inspect(key: LockKeyNames, timeoutMs: number): Promise<NodeLockState | null> {
    const reply = (await this.run(INSPECT, [key.lockKey, key.fenceKey], [], timeoutMs, [key])) as unknown[];
    if (Number(reply[0]) !== 1) return null;
    return { value: String(reply[1]), ttlLeft: Number(reply[2]), fence: Number(reply[3]) };
  }

  /** Deletes the lease at `key` whoever holds it, announcing the release: the value evicted, or null. */
  async forceRelease(key: LockKeyNames, timeoutMs: number): Promise<string | null> {
    const reply = await this.run(FORCE_RELEASE, [key.lockKey], [key.channel], timeoutMs, [key]);
    return typeof reply === 'string' ? reply : null;
  }

  async exists(key: LockKeyNames, timeoutMs: number): Promise<boolean> {
    this.refuseWhenClosed();
    const count = await this.answered(withTimeout(this.client.exists(key.lockKey), timeoutMs));
    return count === 1;
  }

  async ping(timeoutMs: number): Promise<void> {
    this.refuseWhenClosed();
    // Not recorded in `failing`, which is about lock commands: a node that answers PING but times out
    // scripts would be declared healthy by every health probe.
    await withTimeout(this.client.ping(), timeoutMs);
  }

  /** Where release announcements go; set once by the store. */
  onRelease(handler: (channel: string, token: string) => void): void {
    this.messageHandler = handler;
  }

  async subscribe(channel: string, timeoutMs: number): Promise<void> {
    await withTimeout(this.subscriberConnection().subscribe(channel), timeoutMs);
  }

  async unsubscribe(channel: string): Promise<void> {
    await this.subscriber?.unsubscribe(channel);
  }

  /** Closes the connections this node opened (its lock connection and subscriber); a lent client stays open. */
  async close(): Promise<void> {
    this.closed = true;
    const subscriber = this.subscriber;
    this.subscriber = undefined;
    await Promise.all([subscriber?.close(), this.client.close()]);
  }

  private subscriberConnection(): LockClient {
    this.refuseWhenClosed();
    if (!this.subscriber) {
      const subscriber = this.client.duplicate({ subscriber: true });
      subscriber.onMessage((channel, token) => this.messageHandler?.(channel, token));
      this.subscriber = subscriber;
    }
    return this.subscriber;
  }

  /**
   * After close() nothing may be sent or opened: a caller still in a wait loop at shutdown would otherwise
   * open a new subscriber connection that nobody closes (and that reconnects forever once Redis is gone),
   * or keep attempting on a connection being closed.
   */
  private refuseWhenClosed(): void {
    if (this.closed) throw new StoreClosedError();
  }

  /** Runs a script, bounded by `timeoutMs`, its errors mapped by rethrow(). */
  private run(
    script: LockScript,
    names: readonly string[],
    args: readonly RedisArgument[],
    timeoutMs: number,
    keys: readonly LockKeyNames[],
  ): Promise<unknown> {
    this.refuseWhenClosed();
    return withTimeout(this.client.runScript(script, names, args), timeoutMs).then(
      (reply) => this.succeeded(reply),
      (error: unknown) => this.failed(error, keys),
    );
  }

  /**
   * Runs a script that may write a lease. With minReplicas, WAIT follows it in the same round trip (its
   * timeout on top of the command's), and a write (`wrote(reply)`) that fewer replicas acknowledged
   * rejects with ReplicasNotAcknowledgedError.
   */
  private async write(
    script: LockScript,
    names: readonly string[],
    args: readonly RedisArgument[],
    timeoutMs: number,
    keys: readonly LockKeyNames[],
    wrote: (reply: unknown) => boolean,
    what: 'grant' | 'renewal' | 'fence',
  ): Promise<unknown> {
    const minReplicas = this.minReplicas;
    if (!minReplicas) return this.run(script, names, args, timeoutMs, keys);
    this.refuseWhenClosed();
    const { reply, acks } = await withTimeout(
      this.client.runScriptAndWait(script, names, args, minReplicas.replicas, minReplicas.timeout),
      timeoutMs + minReplicas.timeout,
    ).then(
      (answer) => this.succeeded(answer),
      (error: unknown) => this.failed(error, keys),
    );
    if (wrote(reply) && acks < minReplicas.replicas) throw new ReplicasNotAcknowledgedError(what, acks, minReplicas);
    return reply;
  }

  /** Records whether `command` succeeded, for `failing`. */
  private answered<T>(command: Promise<T>): Promise<T> {
    return command.then(
      (reply) => this.succeeded(reply),
      (error: unknown) => {
        this.lastFailed = true;
        throw error;
      },
    );
  }

  private succeeded<T>(reply: T): T {
    this.lastFailed = false;
    return reply;
  }

  /** A script failed: recorded for `failing`, and mapped by rethrow(). */
  private failed(error: unknown, keys: readonly LockKeyNames[]): never {
    this.lastFailed = true;
    return this.rethrow(error, keys);
  }

  /** Foreign data or keys in different Cluster slots are the caller's mistake; anything else is the store's. */
  private rethrow(error: unknown, keys: readonly LockKeyNames[]): never {
    const message = error instanceof Error ? error.message : String(error);
    if (message.startsWith('CROSSSLOT') || message.includes('cross slot') || message.includes('same slot')) {
      throw new InvalidLockKeyError(
        keys.map((key) => key.name),
        'on Redis Cluster the keys of one multi-key lock must share a hash slot; ' +
          'give them a common hash tag, e.g. "{account}:1" and "{account}:2"',
      );
    }
    if (message.startsWith('WRONGTYPE')) {
      throw new InvalidLockKeyError(keys[0].name, 'a Redis key of this lock holds data that is not this library\'s');
    }
    throw error;
  }
}

/** A command asked of a node after close(); the stores report it as LockUnavailableError. */
export class StoreClosedError extends Error {
  constructor() {
    super('the lock store is closed (the application is shutting down)');
    this.name = 'StoreClosedError';
  }
}
