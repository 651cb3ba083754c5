import { Logger } from '@nestjs/common';
import Redis, { type Cluster, type RedisOptions } from 'ioredis';
import { InvalidLockKeyError } from '../../errors';
import type { LockKeyNames } from '../lock-store.interface';
import { withTimeout } from '../shared/with-timeout';
import { ACQUIRE_SCRIPT, EXTEND_SCRIPT, RAISE_FENCES_SCRIPT, RELEASE_SCRIPT, UNDO_SCRIPT } from './lock-scripts';

/** The methods defineCommand adds to a client; namespaced so they cannot clash with a user's own. */
interface LockScriptClient {
  nestLockAcquire(numKeys: number, ...args: (string | number)[]): Promise<number[]>;
  nestLockExtend(numKeys: number, ...args: (string | number)[]): Promise<number>;
  nestLockRelease(numKeys: number, ...args: (string | number)[]): Promise<number>;
  nestLockRaiseFences(numKeys: number, ...args: (string | number)[]): Promise<number | number[]>;
  nestLockUndo(numKeys: number, ...args: string[]): Promise<number>;
}

/** The scripts each client gets, by the command name defineCommand gives them. */
const SCRIPTS: Readonly<Record<keyof LockScriptClient, string>> = {
  nestLockAcquire: ACQUIRE_SCRIPT,
  nestLockExtend: EXTEND_SCRIPT,
  nestLockRelease: RELEASE_SCRIPT,
  nestLockRaiseFences: RAISE_FENCES_SCRIPT,
  nestLockUndo: UNDO_SCRIPT,
};

type Client = Redis | Cluster;

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
 * The lock scripts on one Redis connection (a standalone server, a Sentinel-managed master or a Cluster).
 * The connection is either owned (made here from a URL or options, closed in close()) or borrowed (a client
 * the user passed in: it gets the scripts defined on it and is never closed). Release announcements are
 * received on a subscriber connection of its own, made on first use and always closed here.
 * Every command is bounded by a timeout; connection failures reject with the driver's error, which the
 * stores turn into LockUnavailableError; foreign data at a lock's keys is an InvalidLockKeyError.
 */
export class RedisLockNode {
  private readonly logger = new Logger('LockStore');
  private readonly client: Client;
  private readonly owned: boolean;
  private subscriber: Client | undefined;
  private messageHandler: ((channel: string, token: string) => void) | undefined;
  private corked = false;
  private corkedCommands = 0;
  /** Set by close(): nothing is sent or opened afterwards (a borrowed client stays usable to its owner). */
  private closed = false;

  constructor(connection: string | RedisOptions | Client, readonly label: string) {
    if (typeof connection === 'string' || !isClient(connection)) {
      this.client = createOwnedClient(connection);
      this.owned = true;
      this.client.on('error', (error: Error) => this.logger.warn(`Redis ${label}: ${error.message}`));
    } else {
      this.client = connection;
      this.owned = false;
    }
    // A borrowed client may already carry them (another store or node on the same client).
    const client = this.client as Client & Partial<LockScriptClient>;
    for (const [name, lua] of Object.entries(SCRIPTS) as [keyof LockScriptClient, string][]) {
      if (!client[name]) this.client.defineCommand(name, { lua });
    }
  }

  get isCluster(): boolean {
    return (this.client as { isCluster?: boolean }).isCluster === true;
  }

  async acquire(keys: readonly LockKeyNames[], token: string, ttl: number, timeoutMs: number): Promise<NodeAcquireReply> {
    const args: (string | number)[] = [];
    for (const key of keys) args.push(key.lockKey);
    for (const key of keys) args.push(key.fenceKey);
    args.push(token, ttl);
    const reply = await withTimeout(this.scripts().nestLockAcquire(keys.length * 2, ...args), timeoutMs).catch(
      (error: unknown) => this.rethrow(error, keys),
    );
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
    const args: (string | number)[] = keys.map((key) => key.lockKey);
    args.push(token, ttl);
    const reply = await withTimeout(this.scripts().nestLockExtend(keys.length, ...args), timeoutMs).catch(
      (error: unknown) => this.rethrow(error, keys),
    );
    return Number(reply) === 1;
  }

  /**
   * Returns how many of the keys still held `token` and were released: deleted, or with `holdFor` > 0
   * left to expire in that many ms (minHold).
   */
  async release(keys: readonly LockKeyNames[], token: string, timeoutMs: number, holdFor = 0): Promise<number> {
    const args: (string | number)[] = keys.map((key) => key.lockKey);
    args.push(token, Math.max(0, Math.ceil(holdFor)));
    for (const key of keys) args.push(key.channel);
    const reply = await withTimeout(this.scripts().nestLockRelease(keys.length, ...args), timeoutMs).catch(
      (error: unknown) => this.rethrow(error, keys),
    );
    return Number(reply);
  }

  /** Takes back an attempt that did not become a lock, silently (see UNDO_SCRIPT). */
  async undo(keys: readonly LockKeyNames[], token: string, timeoutMs: number): Promise<void> {
    const args: string[] = keys.map((key) => key.lockKey);
    args.push(token);
    await withTimeout(this.scripts().nestLockUndo(keys.length, ...args), timeoutMs).catch((error: unknown) =>
      this.rethrow(error, keys),
    );
  }

  /**
   * Redlock's fence write-back: raises each key's fence counter on this node to at least `fences[i]`,
   * provided this node still holds every key with `token`. True when it did (or the counters were already
   * that high); false when the node no longer holds the lock.
   */
  async raiseFences(keys: readonly LockKeyNames[], token: string, fences: readonly number[], timeoutMs: number): Promise<boolean> {
    const args: (string | number)[] = [];
    for (const key of keys) args.push(key.lockKey);
    for (const key of keys) args.push(key.fenceKey);
    args.push(token, ...fences);
    const reply = await withTimeout(this.scripts().nestLockRaiseFences(keys.length * 2, ...args), timeoutMs).catch(
      (error: unknown) => this.rethrow(error, keys),
    );
    if (Array.isArray(reply)) {
      const key = keys[Number(reply[1]) - 1];
      throw new InvalidLockKeyError(
        key.name,
        `Redis key ${JSON.stringify(key.fenceKey)} holds data that is not this library's; choose another key or keyPrefix`,
      );
    }
    return Number(reply) === 1;
  }

  async exists(key: LockKeyNames, timeoutMs: number): Promise<boolean> {
    this.refuseWhenClosed();
    const count = await withTimeout(this.client.exists(key.lockKey), timeoutMs);
    return count === 1;
  }

  async ping(timeoutMs: number): Promise<void> {
    this.refuseWhenClosed();
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

  /** Closes the subscriber (always ours) and the client only when this node made it. */
  async close(): Promise<void> {
    this.closed = true;
    const closing: Promise<unknown>[] = [];
    if (this.subscriber) closing.push(quit(this.subscriber));
    if (this.owned) closing.push(quit(this.client));
    this.subscriber = undefined;
    await Promise.all(closing);
  }

  private subscriberConnection(): Client {
    this.refuseWhenClosed();
    if (!this.subscriber) {
      // No ready check on the subscriber: ioredis sends INFO for it, which a connection already in subscriber
      // mode (a second SUBSCRIBE queued while connecting) refuses, failing the pending subscriptions.
      const subscriber = (
        this.isCluster ? (this.client as Cluster).duplicate() : (this.client as Redis).duplicate({ enableReadyCheck: false })
      ) as Client;
      subscriber.on('error', (error: Error) => this.logger.warn(`Redis ${this.label} (subscriber): ${error.message}`));
      subscriber.on('message', (channel: string, token: string) => this.messageHandler?.(channel, token));
      this.subscriber = subscriber;
    }
    return this.subscriber;
  }

  /**
   * After close() nothing may be sent or opened: a caller still in a wait loop at shutdown would otherwise
   * open a new subscriber connection that nobody closes (and that reconnects forever once Redis is gone),
   * or keep attempting on a borrowed client that stays open.
   */
  private refuseWhenClosed(): void {
    if (this.closed) throw new StoreClosedError();
  }

  private scripts(): LockScriptClient {
    this.refuseWhenClosed();
    this.coalesceWrites();
    return this.client as unknown as LockScriptClient;
  }

  /**
   * Coalesces the commands of one tick into few socket writes, in place of ioredis auto-pipelining (which
   * builds a Pipeline per batch, delays every command to a later tick, and keeps one batch in flight per
   * connection; measured: half the throughput at 64 callers, and slower serial calls). The socket is
   * corked at the first command of a tick and uncorked once the tick's callbacks and promise jobs have
   * run, and flushed early every FLUSH_EVERY commands so Redis starts on a burst while the rest is built.
   * Only on connections this node owns: a borrowed client's socket is left as its owner set it up.
   */
  private coalesceWrites(): void {
    if (!this.owned) return;
    const stream = (this.client as unknown as { stream?: Partial<Corkable> }).stream;
    if (typeof stream?.cork !== 'function' || typeof stream.uncork !== 'function') return;
    if (this.corked) {
      if (++this.corkedCommands >= FLUSH_EVERY) {
        stream.uncork();
        stream.cork();
        this.corkedCommands = 0;
      }
      return;
    }
    stream.cork();
    this.corked = true;
    this.corkedCommands = 1;
    process.nextTick(() => {
      this.corked = false;
      (stream as Corkable).uncork();
    });
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

interface Corkable {
  cork(): void;
  uncork(): void;
}

/** Most commands one socket write carries when many are sent in one tick. */
const FLUSH_EVERY = 32;

function isClient(value: RedisOptions | Client): value is Client {
  return typeof (value as Client).defineCommand === 'function';
}

function createOwnedClient(connection: string | RedisOptions): Redis {
  // Writes are coalesced per tick by the node itself (see coalesceWrites); a small retry budget keeps a
  // dead server from holding a caller far beyond the store's own command timeout. Connected on the first
  // command, not when the module is built: an application whose bootstrap fails afterwards (a bad @Locked
  // template, another module's onModuleInit) runs no shutdown hook, and would leave the connection open.
  const ours: RedisOptions = { maxRetriesPerRequest: 2, lazyConnect: true };
  return typeof connection === 'string' ? new Redis(connection, ours) : new Redis({ ...ours, ...connection });
}

async function quit(client: Client): Promise<void> {
  // Never connected (lazyConnect): QUIT would open a connection just to close it.
  if (client.status === 'wait') {
    client.disconnect();
    return;
  }
  try {
    await withTimeout(client.quit(), 1_000);
  } catch {
    client.disconnect();
  }
}
