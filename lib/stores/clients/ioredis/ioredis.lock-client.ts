import type { Logger } from '@nestjs/common';
import Redis, { type Command } from 'ioredis';
import { ScriptCommand, type ScriptsSent } from './script-command';
import type { LockClient, RedisArgument, ReplicatedReply } from '../lock-client';
import type { LockScript } from '../lock-script';
import { ClusterNodeLogs, ConnectionLog } from '../connection-log';
import { quitOrDisconnect } from './quit';
import { type ServerInfo, batchRefusal, fitsBatches } from './batch-fit';
import { BatchedCall, batchArguments, batchScript } from './script-batch';
import { CommandTimeoutError } from '../../../errors/command-timeout.error';
import { expireAfter, withTimeout } from '../../shared/with-timeout';
import { safeMessage } from '../../../errors/safe-cause';

/** A command defineCommand added: `numkeys, ...keys, ...args`. */
type DefinedScript = (numKeys: number, ...keysAndArgs: RedisArgument[]) => Promise<unknown>;

/**
 * Queues a command built by the caller on a pipeline (Pipeline#sendCommand, in ioredis 5 and 6 and iovalkey
 * alike, but not in their typings of a pipeline); it is written to the socket the pipeline goes out on.
 */
function queueCommand(pipeline: IoredisPipeline, command: Command): void {
  (pipeline as unknown as { sendCommand(queued: Command): unknown }).sendCommand(command);
}

interface IoredisPipeline {
  evalsha(sha: string, numKeys: number, ...keysAndArgs: RedisArgument[]): IoredisPipeline;
  eval(lua: string, numKeys: number, ...keysAndArgs: RedisArgument[]): IoredisPipeline;
  call(command: string, ...args: RedisArgument[]): IoredisPipeline;
  exec(): Promise<[Error | null, unknown][] | null>;
}

/**
 * What the adapter uses of an ioredis 5/6 (or iovalkey) `Redis` or `Cluster`: only what both share, so a
 * second copy of the library in node_modules, or the fork, fits too.
 */
export interface IoredisConnection {
  readonly isCluster?: boolean;
  readonly status: string;
  /** The socket of a standalone connection (absent on a Cluster, and before connecting). */
  readonly stream?: unknown;
  defineCommand(name: string, definition: { lua: string }): void;
  /** Queues a command built by the caller; resolves with its reply (ioredis types it loosely). */
  sendCommand(command: Command): unknown;
  pipeline(): IoredisPipeline;
  exists(key: string): Promise<number>;
  ping(): Promise<unknown>;
  subscribe(channel: string): Promise<unknown>;
  unsubscribe(channel: string): Promise<unknown>;
  quit(): Promise<unknown>;
  disconnect(): void;
  on(event: string, listener: (...args: never[]) => void): unknown;
  /** A Cluster's: fetches the slot map anew (CLUSTER SLOTS), then calls back (with an error if no node answered). */
  refreshSlotsCache?(callback: (error?: Error | null) => void): void;
}

/** A node connection of an ioredis Cluster, as its '+node' event gives it. */
interface ClusterNodeConnection {
  readonly options: { readonly host?: string; readonly port?: number };
  on(event: 'ready', listener: () => void): unknown;
}

/** The options this adapter overrides on every connection it duplicates (see duplicateIoredis). */
interface StandaloneDuplicate {
  duplicate(override: Record<string, unknown>): IoredisConnection;
}
interface ClusterDuplicate {
  duplicate(startupNodes: never[], override: Record<string, unknown>): IoredisConnection;
}

/** ioredis' ready check (Redis.prototype._readyCheck in ioredis 5 and 6): INFO, parsed, before a connection is ready. */
type ReadyCheckCallback = (error: Error | null | undefined, info?: ServerInfo) => void;
interface ReadyChecked {
  _readyCheck?: (callback: ReadyCheckCallback) => void;
}

interface Corkable {
  cork(): void;
  uncork(): void;
}

/** Most commands one socket write carries when many are sent in one tick. */
const FLUSH_EVERY = 32;

/**
 * The ioredis adapter (ioredis 5 and 6, and iovalkey, its API-identical fork). Scripts are registered with
 * defineCommand on the connection, which is how ioredis caches them best: EVALSHA with the SHA computed
 * client-side, EVAL on NOSCRIPT. The connection is always this adapter's own (made by the module or
 * duplicated from a lent client), so registering commands never touches a user's client, and the writes
 * of one tick are coalesced (see coalesceWrites).
 */
export class IoredisLockClient implements LockClient {
  readonly family = 'ioredis';
  private readonly defined = new Set<string>();
  private messageHandler: ((channel: string, message: string) => void) | undefined;
  /** The socket corked in this tick, if any: uncorked at the tick's end, even if the connection moved on. */
  private corkedStream: Corkable | undefined;
  /** Commands written into the cork since it was last flushed (see coalesceWrites). */
  private corkedCommands = 0;
  private closing: Promise<void> | undefined;
  /**
   * Whether the server takes batches of script calls (see fitsBatches), from the INFO of ioredis' ready check
   * on each (re)connection (see readBatchFit): until then, and without a ready check, every call goes alone.
   */
  private batches = false;
  /** Set once a batch was refused as a server that shards would (CROSSSLOT, MOVED, ASK): no batches again. */
  private batchesRefused = false;
  /** Whether a script call went out in this tick: the tick's later calls then wait in `batched` (see runScript). */
  private tickOpen = false;
  /** Script calls of this tick after its first, sent as one batch at the tick's end (or every FLUSH_EVERY). */
  private batched: BatchedCall[] = [];
  /**
   * Set when the connection is a `Redis` of the ioredis this library loads (every connection the module
   * makes from options, and the duplicate of a lent client of the same ioredis): its commands can then be
   * built directly (ScriptCommand). A Cluster, iovalkey or another copy of ioredis goes through defineCommand.
   */
  private readonly direct: boolean;
  /** For ScriptCommand: the scripts each socket was sent in full. Replaced after a NOSCRIPT (a SCRIPT FLUSH). */
  private scriptsSent = new WeakMap<object, Set<string>>();
  connectionError: string | undefined;
  private readonly sentScripts: ScriptsSent = {
    on: (socket) => {
      let sent = this.scriptsSent.get(socket);
      if (!sent) {
        sent = new Set();
        this.scriptsSent.set(socket, sent);
      }
      return sent;
    },
  };

  constructor(
    private readonly connection: IoredisConnection,
    private readonly label: string,
    private readonly logger: Logger,
    /** See coalesceWrites: a lone deployment's connection writes a tick's first command at once when idle. */
    private readonly writeFirstWhenIdle: boolean,
  ) {
    // Without a listener an 'error' event would be thrown; a connection error is reported to callers
    // by their commands (rejected, or timed out by the store), so a warning is all it needs here.
    const log = new ConnectionLog(logger, label);
    connection.on('error', (error: Error) => {
      this.connectionError = safeMessage(error);
      log.error(this.connectionError);
    });
    connection.on('ready', () => {
      this.connectionError = undefined;
      log.ready();
    });
    if (connection.isCluster === true) this.logClusterNodes(connection, new ClusterNodeLogs(logger, label));
    connection.on('message', (channel: string, message: string) => this.messageHandler?.(channel, message));
    this.direct = connection instanceof Redis;
    if (this.direct) this.readBatchFit(connection as ReadyChecked & IoredisConnection);
  }

  /**
   * A Cluster reports a node's connection errors as 'node error' (with the node's `host:port`), and each node
   * connection it makes ('+node') its readiness itself.
   */
  private logClusterNodes(cluster: IoredisConnection, logs: ClusterNodeLogs): void {
    cluster.on('node error', (error: Error, address: string) => logs.error(address, safeMessage(error)));
    cluster.on('+node', (node: ClusterNodeConnection) => {
      const address = `${node.options.host}:${node.options.port}`;
      node.on('ready', () => logs.ready(address));
    });
  }

  /**
   * Reads whether the server takes batches from the INFO that ioredis' ready check sends on every connection
   * and reconnection, before any command of ours is written: no command of its own (a probe would be one
   * more command a proxy may choke on: twemproxy closes a connection on a command it does not know, and
   * ioredis would resend it after every reconnect), and a failover to another kind of server is noticed. The
   * wrapper is set on this adapter's own connection only. No ready check (enableReadyCheck: false, an INFO the
   * ACL refuses, another ioredis whose check differs): no batches.
   */
  private readBatchFit(connection: ReadyChecked & IoredisConnection): void {
    const readyCheck = connection._readyCheck;
    if (typeof readyCheck !== 'function') return;
    // ioredis checks again while the server loads its data, through this wrapper with the callback it was given.
    const ours = new WeakSet<ReadyCheckCallback>();
    connection._readyCheck = (callback) => {
      if (ours.has(callback)) return readyCheck.call(connection, callback);
      const read: ReadyCheckCallback = (error, info) => {
        try {
          this.batches = !this.batchesRefused && error == null && typeof info === 'object' && info !== null && fitsBatches(info);
        } finally {
          callback(error, info);
        }
      };
      ours.add(read);
      return readyCheck.call(connection, read);
    };
    // Until the next ready check, no batches: calls made while the connection is down wait in ioredis' offline
    // queue, and go to whatever server it reconnects to (a batch already written and resent after a reconnect
    // is the one exception, see the README).
    connection.on('close', () => {
      this.batches = false;
    });
  }

  get isCluster(): boolean {
    return this.connection.isCluster === true;
  }

  /**
   * A direct connection sends a tick's first script call at once (one caller pays nothing for batching) and
   * queues the tick's later calls, which go out together as one call of the batch script (see script-batch.ts)
   * at the tick's end: one command, one reply and one dispatch in Redis for many calls, in the order they
   * were made (every other command flushes the queue first, so nothing overtakes a queued call).
   */
  runScript(script: LockScript, keys: readonly string[], args: readonly RedisArgument[], timeoutMs?: number): Promise<unknown> {
    if (this.direct) {
      if (!this.tickOpen) {
        this.tickOpen = true;
        process.nextTick(this.endBatchTick);
        return this.sendScript(script, keys, args, timeoutMs, true);
      }
      if (this.batches !== true || script.batchIndex < 1) {
        this.flushBatch();
        return this.sendScript(script, keys, args, timeoutMs, true);
      }
      return this.queue(script, keys, args, timeoutMs);
    }
    if (!this.defined.has(script.name)) {
      this.connection.defineCommand(script.name, { lua: script.lua });
      this.defined.add(script.name);
    }
    this.coalesceWrites();
    const command = (this.connection as unknown as Record<string, DefinedScript>)[script.name];
    const reply = command.call(this.connection, keys.length, ...keys, ...args);
    return timeoutMs === undefined ? reply : withTimeout(reply, timeoutMs);
  }

  /**
   * Sends a ScriptCommand. Its deadline rejects the command itself, as ioredis' own commandTimeout does
   * (a late reply then settles nothing), so no promise wraps it: this is the hot path of every lock.
   * A NOSCRIPT means the server lost its scripts under a live connection (a SCRIPT FLUSH, as a rule: a new
   * connection is always sent the script first): every socket is then presumed to have lost every script,
   * and the command is sent again once, in full, within what is left of its timeout.
   */
  private sendScript(
    script: LockScript,
    keys: readonly string[],
    args: readonly RedisArgument[],
    timeoutMs: number | undefined,
    retry: boolean,
  ): Promise<unknown> {
    this.coalesceWrites();
    const sentAt = performance.now();
    const command = new ScriptCommand(script, this.sentScripts, keys, args, timeoutMs ?? Infinity);
    const reply = this.connection.sendCommand(command) as Promise<unknown>;
    // Armed once the command is queued: a sendCommand that threw leaves no deadline to reject a promise
    // nobody listens to.
    const deadline = timeoutMs === undefined ? undefined : expireAfter(command);
    return reply.then(
      (value) => {
        deadline?.cancel(command);
        return value;
      },
      (error: Error) => {
        deadline?.cancel(command);
        if (!retry || !isNoScript(error)) throw error;
        this.scriptsSent = new WeakMap();
        // The resend has what is left of the caller's time, not a whole timeout of its own.
        const left = timeoutMs === undefined ? undefined : timeoutMs - (performance.now() - sentAt);
        if (left !== undefined && left <= 0) throw new CommandTimeoutError(timeoutMs as number);
        return this.sendScript(script, keys, args, left, false);
      },
    );
  }

  /** Queues a call for this tick's batch, its deadline armed now, as a command's is when it is sent. */
  private queue(script: LockScript, keys: readonly string[], args: readonly RedisArgument[], timeoutMs: number | undefined): Promise<unknown> {
    const call = new BatchedCall(script, keys, args, timeoutMs ?? Infinity);
    if (timeoutMs !== undefined) call.deadline = expireAfter(call);
    this.batched.push(call);
    if (this.batched.length >= FLUSH_EVERY) {
      // Written now, not at the tick's end: Redis starts on it while the rest of the tick is built.
      this.flushBatch();
      this.flushCork();
    }
    return call.promise;
  }

  /** The tick's end: its queued calls go out. Bound once: no closure per tick. */
  private readonly endBatchTick = (): void => {
    this.tickOpen = false;
    this.flushBatch();
  };

  /** Sends the queued calls: one alone as its own command, more as one call of the batch script. */
  private flushBatch(): void {
    const calls = this.batched;
    if (calls.length === 0) return;
    this.batched = [];
    if (calls.length === 1) {
      this.sendAlone(calls[0], true);
      return;
    }
    const { keys, args } = batchArguments(calls);
    let replies: Promise<unknown>;
    try {
      this.coalesceWrites();
      replies = this.connection.sendCommand(new ScriptCommand(batchScript(), this.sentScripts, keys, args, Infinity)) as Promise<unknown>;
    } catch (error) {
      for (const call of calls) call.fail(error as Error);
      return;
    }
    replies.then(
      (reply) => {
        if (!Array.isArray(reply) || reply.length !== calls.length) {
          const error = new Error(`batch of ${calls.length} script calls answered ${Array.isArray(reply) ? reply.length : typeof reply} replies`);
          for (const call of calls) call.fail(error);
          return;
        }
        for (let i = 0; i < calls.length; i++) {
          const each: unknown = reply[i];
          // An error nested in the reply is the call's own; ioredis' reconnectOnError never sees it (see the
          // README: a READONLY fails the call, as it would a lone command sent a moment before the reconnect).
          if (each instanceof Error) calls[i].fail(each);
          else calls[i].settle(each);
        }
      },
      (error: Error) => {
        const refusal = batchRefusal(error);
        if (refusal === 'fail-each') {
          for (const call of calls) call.fail(error);
          return;
        }
        if (refusal === 'send-each') {
          // The server lost its scripts (SCRIPT FLUSH): each call goes again on its own, in full.
          this.scriptsSent = new WeakMap();
        } else if (!this.batchesRefused) {
          this.batchesRefused = true;
          this.batches = false;
          this.logger.warn(`Redis ${this.label}: a batch of script calls was refused (${safeMessage(error)}); sending each call on its own from now on`);
        }
        // In the order they were made, each with what is left of its time.
        for (const call of calls) {
          if (performance.now() - call.queuedAt >= call.timeoutMs) call.fail(new CommandTimeoutError(call.timeoutMs));
          else this.sendAlone(call, refusal !== 'send-each');
        }
      },
    );
  }

  /**
   * Sends a queued call as a command of its own, settled by its reply; its deadline stays the one armed when it
   * was queued. `retry`: once more, in full, on NOSCRIPT.
   */
  private sendAlone(call: BatchedCall, retry: boolean): void {
    let reply: Promise<unknown>;
    try {
      reply = this.sendScript(call.script, call.keys, call.args, undefined, retry);
    } catch (error) {
      call.fail(error as Error);
      return;
    }
    reply.then(
      (each) => call.settle(each),
      (each: Error) => call.fail(each),
    );
  }

  async runScriptAndWait(
    script: LockScript,
    keys: readonly string[],
    args: readonly RedisArgument[],
    replicas: number,
    timeoutMs: number,
  ): Promise<ReplicatedReply> {
    // A pipeline, not two calls: on a Cluster it is sent whole to the node of its keys (WAIT has none of
    // its own), and ioredis' NOSCRIPT fallback of a defined command would resend the script after WAIT.
    // On a direct connection the script goes as a ScriptCommand: in full the first time on a socket, as a plain
    // call does, so it is answered NOSCRIPT, and resent behind commands made meanwhile (see resent), only when
    // the server lost its scripts under a live connection (a SCRIPT FLUSH; Redis 7.4+ also evicts old EVAL
    // scripts). A Cluster's or a foreign client's connection sends by SHA first (see runScript).
    const send = async (byHash: boolean): Promise<[Error | null, unknown][]> => {
      this.flushBatch();
      const pipeline = this.connection.pipeline();
      if (byHash && this.direct) queueCommand(pipeline, new ScriptCommand(script, this.sentScripts, keys, args, Infinity));
      else if (byHash) pipeline.evalsha(script.sha, keys.length, ...keys, ...args);
      else pipeline.eval(script.lua, keys.length, ...keys, ...args);
      pipeline.call('WAIT', replicas, timeoutMs);
      this.coalesceWrites();
      return (await pipeline.exec()) ?? [];
    };
    let results = await send(true);
    let resent = false;
    if (isNoScript(results[0]?.[0])) {
      this.scriptsSent = new WeakMap();
      results = await send(false);
      resent = true;
    }
    // On a Cluster, ioredis follows a redirection of a pipeline only when every command in it failed alike
    // (or the others are read-only); here WAIT, which has no key, succeeds on whichever node took the
    // pipeline, so a MOVED of the script comes back as is, and nothing learns the new owner of the slot:
    // measured, after a master failover every renewal under minReplicas went on answering MOVED for the
    // whole lease, while single commands (which refresh the slot map on MOVED) reached the promoted replica
    // at once. So the map is refreshed here, and the pipeline sent again once (MOVED: the script did not
    // run). A second MOVED (a node not yet told of the promotion) is the caller's to retry, as is CLUSTERDOWN
    // during the failover itself.
    if (isMoved(results[0]?.[0]) && (await this.refreshSlots())) {
      results = await send(true);
      if (isNoScript(results[0]?.[0])) results = await send(false);
      resent = true;
    }
    const [[scriptError, reply] = [null, undefined], [waitError, acks] = [null, 0]] = results;
    if (scriptError) throw scriptError;
    if (waitError) throw waitError;
    return { reply, acks: Number(acks), resent };
  }

  exists(key: string): Promise<number> {
    this.flushBatch();
    return this.connection.exists(key);
  }

  async ping(): Promise<void> {
    this.flushBatch();
    await this.connection.ping();
  }

  onMessage(handler: (channel: string, message: string) => void): void {
    this.messageHandler = handler;
  }

  async subscribe(channel: string): Promise<void> {
    await this.connection.subscribe(channel);
  }

  async unsubscribe(channel: string): Promise<void> {
    await this.connection.unsubscribe(channel);
  }

  duplicate(options: { readonly subscriber?: boolean } = {}): IoredisLockClient {
    const label = options.subscriber ? `${this.label} (subscriber)` : this.label;
    return new IoredisLockClient(duplicateIoredis(this.connection, options.subscriber === true), label, this.logger, this.writeFirstWhenIdle);
  }

  /** Fetches a Cluster's slot map anew; false when this is no Cluster (nothing to refresh). */
  private refreshSlots(): Promise<boolean> {
    const connection = this.connection;
    if (!this.isCluster || typeof connection.refreshSlotsCache !== 'function') return Promise.resolve(false);
    // No node answering is no reason to give up here: the pipeline sent again then fails as it would have.
    return new Promise((resolve) => connection.refreshSlotsCache?.(() => resolve(true)));
  }

  close(): Promise<void> {
    this.flushBatch();
    this.closing ??= this.quit();
    return this.closing;
  }

  private async quit(): Promise<void> {
    const connection = this.connection;
    // Never connected (lazyConnect): QUIT would open a connection just to close it.
    // While it reconnects, QUIT goes through quitOrDisconnect like any close: ioredis answers it at once when
    // nothing is queued, and otherwise gives the queued commands (a shutdown's releases among them) up to a
    // second to go out should the server come back, instead of leaving their locks held for a ttl.
    if (connection.status === 'wait' || connection.status === 'end') {
      connection.disconnect();
      return;
    }
    await quitOrDisconnect(
      () => connection.quit(),
      () => connection.disconnect(),
    );
  }

  /**
   * Coalesces the commands of one tick into few socket writes, in place of ioredis auto-pipelining (which
   * builds a Pipeline per batch, delays every command to a later tick, and keeps one batch in flight per
   * connection; measured: half the throughput at 64 callers, and slower serial calls). The socket is
   * corked at the first command of a tick and uncorked once the tick's callbacks and promise jobs have
   * run, and flushed early every FLUSH_EVERY commands so Redis starts on a burst while the rest is built.
   *
   * With `writeFirstWhenIdle` (one standalone or Sentinel-managed deployment, not a Redlock node; a Cluster
   * has no socket to cork either way), a tick's first command on a connection with nothing in flight is
   * written at once, uncorked, and only the tick's later commands are corked: Redis then runs it while this
   * process finishes the tick (the lease, the caller's continuation, the next command's arguments), instead
   * of after. A lone caller's commands are such commands, as a rule (not while a renewal's reply, or a
   * minReplicas WAIT, is still due). In-process A/Bs, interleaved: serial acquire + release 2-8% faster, 8
   * callers on one key +3-5%, 64 callers on distinct keys within noise (-3% to +9%). Not for Redlock nodes: at
   * 5 servers and 64 callers the extra writes (and wake-ups of each server) cost 6-8% of the throughput in the same A/B (10-12% when every tick's first command was written
   * at once, idle or not).
   * Safe because the connection is this adapter's alone: nobody else's commands wait in the cork.
   */
  private coalesceWrites(): void {
    if (this.corkedStream) {
      if (++this.corkedCommands >= FLUSH_EVERY) this.flushCork();
      return;
    }
    if (this.writeFirstWhenIdle && this.nothingInFlight()) return;
    const stream = this.connection.stream as Partial<Corkable> | undefined;
    if (typeof stream?.cork !== 'function' || typeof stream.uncork !== 'function') return;
    stream.cork();
    this.corkedStream = stream as Corkable;
    this.corkedCommands = 1;
    process.nextTick(this.endTick);
  }

  /**
   * No command on the connection was sent and is unanswered, or waits to be sent again after a reconnect
   * (ioredis' queue of sent commands, in ioredis 5 and 6 and iovalkey; a connection without one is presumed
   * busy, and corks).
   */
  private nothingInFlight(): boolean {
    return (this.connection as { commandQueue?: { readonly length: number } }).commandQueue?.length === 0;
  }

  /** Writes what the cork holds, and corks again for the rest of the tick. */
  private flushCork(): void {
    const corked = this.corkedStream;
    if (!corked) return;
    corked.uncork();
    corked.cork();
    this.corkedCommands = 0;
  }

  /** The tick's end: its corked commands go out in one write. Bound once: no closure per tick. */
  private readonly endTick = (): void => {
    const stream = this.corkedStream;
    this.corkedStream = undefined;
    stream?.uncork();
  };
}

/**
 * How long ioredis lets a dropped connection's socket close by itself before destroying it (its default is
 * 2 s). ioredis arms that timer even for a socket that is already closed (a server that refused the
 * connection), and nothing clears it then: an application closing while Redis was unreachable stayed alive
 * 2 s after app.close(). The module drops a connection only once QUIT has failed or timed out (or before
 * it ever connected): whatever could still be flushed has had its second by then.
 */
export const DISCONNECT_TIMEOUT_MS = 100;

/**
 * What every connection of the module overrides, made from options or duplicated from a lent client:
 * - no key prefix: LockModule's `keyPrefix` names the lock keys, the same in every process whatever client it
 *   uses; a client prefix would silently put this process's locks under other names than its peers' (two
 *   holders of one lock) and hide them from inspect() and forceRelease() elsewhere;
 * - an offline queue: the connection opens on its first command (lazyConnect), which without a queue would be
 *   refused ("Stream isn't writeable"); the stores bound every command with their own timeout anyway.
 */
export const MODULE_CONNECTION_OVERRIDES = { keyPrefix: '', enableOfflineQueue: true } as const;

/**
 * A new connection with `connection`'s options. Overridden, because the copy is the module's and its
 * commands are bounded by the store's own timeouts: connected on first use (a module whose bootstrap
 * fails never opens it), no auto-pipelining (writes are coalesced per tick instead), and a small retry
 * budget so a dead server does not pile commands up, plus MODULE_CONNECTION_OVERRIDES. A subscriber skips the
 * ready check: ioredis sends INFO for it, which a connection already in subscriber mode refuses, failing the
 * pending subscriptions. On a Cluster only the Cluster's own options are overridden (its per-node options,
 * TLS and auth among them, would be replaced whole); its commands are prefixed by the Cluster's keyPrefix only.
 */
export function duplicateIoredis(connection: IoredisConnection, subscriber: boolean): IoredisConnection {
  if (connection.isCluster === true) {
    return (connection as unknown as ClusterDuplicate).duplicate([], {
      lazyConnect: true,
      enableAutoPipelining: false,
      ...MODULE_CONNECTION_OVERRIDES,
    });
  }
  return (connection as unknown as StandaloneDuplicate).duplicate({
    lazyConnect: true,
    enableAutoPipelining: false,
    maxRetriesPerRequest: 2,
    disconnectTimeout: DISCONNECT_TIMEOUT_MS,
    ...MODULE_CONNECTION_OVERRIDES,
    ...(subscriber ? { enableReadyCheck: false } : {}),
  });
}

/** The key prefix a lent ioredis client (or Cluster) applies to its own commands, if any. */
export function lentKeyPrefix(connection: object): string | undefined {
  const prefix = (connection as { options?: { keyPrefix?: unknown } }).options?.keyPrefix;
  return typeof prefix === 'string' && prefix !== '' ? prefix : undefined;
}

function isNoScript(error: Error | null | undefined): boolean {
  return error != null && String(error.message).startsWith('NOSCRIPT');
}

function isMoved(error: Error | null | undefined): boolean {
  return error != null && String(error.message).startsWith('MOVED ');
}
