// The LockClient of node-redis (the `redis` package) v4 and v5, clients and clusters.
import type { Logger } from '@nestjs/common';
import type { LockClient, LockClientOptions, RedisArgument, ReplicatedReply } from '../lock-client';
import type { LockScript } from '../lock-script';
import { isClusterClient } from '../../../options/client-shape';
import { ClusterNodeLogs, ConnectionLog } from '../connection-log';
import { withTimeout } from '../../../util/with-timeout';
import { safeMessage } from '../../../errors/safe-cause';

type MessageListener = (message: string, channel: string) => void;

/** How long close() lets replies to commands already sent arrive before dropping the connection. */
const QUIET_TIMEOUT_MS = 1_000;

/** What both a node-redis client and a cluster (v4 and v5) offer, and the adapter uses. */
interface NodeRedisCommon {
  readonly isOpen: boolean;
  readonly options?: { readonly legacyMode?: boolean };
  connect(): Promise<unknown>;
  duplicate(overrides?: Record<string, unknown>): NodeRedisConnection;
  subscribe(channel: string, listener: MessageListener): Promise<void>;
  unsubscribe(channel: string): Promise<void>;
  on(event: string, listener: (...args: never[]) => void): unknown;
  /** v5: immediate close; v4 has disconnect() instead. */
  destroy?(): unknown;
  disconnect?(): Promise<unknown>;
}

/** A node-redis client (`createClient`). */
export interface NodeRedisClient extends NodeRedisCommon {
  sendCommand(args: string[]): Promise<unknown>;
}

/** A node-redis cluster (`createCluster`): commands are routed by their first key. */
export interface NodeRedisCluster extends NodeRedisCommon {
  readonly masters: unknown;
  sendCommand(firstKey: string | undefined, isReadonly: boolean | undefined, args: string[]): Promise<unknown>;
}

export type NodeRedisConnection = NodeRedisClient | NodeRedisCluster;

/** Which node a v5 cluster's node event is about (its socket's address). */
interface ClusterNodeInfo {
  readonly host: string;
  readonly port: number;
}

/** A node-redis cluster has a node list and routes commands itself; a client has neither. */
function isNodeRedisCluster(connection: NodeRedisConnection): connection is NodeRedisCluster {
  return isClusterClient(connection);
}

/**
 * The node-redis adapter (the `redis` package, v4 and v5; clients and clusters). Scripts run the way
 * node-redis runs its own defined scripts: EVALSHA, then EVAL on NOSCRIPT. A script cannot be added to a
 * client after it was created, and raw commands keep the adapter free of each version's typed command API.
 * node-redis already writes the commands of one tick together (it flushes its queue once per tick), so
 * nothing is corked here.
 *
 * The connection is the adapter's own, connected on first use: node-redis queues commands sent while it
 * connects (a client does; a cluster must first learn its slots, so its commands wait for that).
 */
export class NodeRedisLockClient implements LockClient {
  readonly family = 'node-redis';
  readonly isCluster: boolean;
  private connecting: Promise<void> | undefined;
  private messageHandler: ((channel: string, message: string) => void) | undefined;
  private readonly listener: MessageListener = (message, channel) => this.messageHandler?.(channel, message);
  private closing: Promise<void> | undefined;
  /** Ready once already: a 'ready' from now on follows a lost connection (see onReconnect). */
  private wasReady = false;
  private reconnectHandler: (() => void) | undefined;
  /**
   * SHAs of the scripts sent in full (EVAL) on the current connection, so Redis has them cached. Emptied
   * when the connection drops: the next connection (maybe to a restarted server, or a promoted replica)
   * is sent each script in full again rather than answered NOSCRIPT, whose resend would let the commands
   * queued behind it run first. Not airtight: node-redis chooses nothing at write time, and a command
   * built as EVALSHA in the tick the socket dropped, still unwritten, goes out first on the new connection
   * (a hand-over may then be missed, the waiter retrying on its timer; never two holders).
   */
  private readonly scriptsSent = new Set<string>();
  connectionError: string | undefined;
  /** Commands sent and not answered yet, and who waits for there to be none (close()). */
  private inFlight = 0;
  private idle: (() => void) | undefined;

  private readonly label: string;
  private readonly logger: Logger;

  constructor(
    private readonly connection: NodeRedisConnection,
    options: Pick<LockClientOptions, 'label' | 'logger'>,
  ) {
    const { label, logger } = options;
    this.label = label;
    this.logger = logger;
    this.isCluster = isNodeRedisCluster(connection);
    // An 'error' event without a listener would be thrown; callers learn of failures from their commands.
    const log = new ConnectionLog(logger, label);
    connection.on('error', (error: Error) => {
      this.scriptsSent.clear();
      this.connectionError = safeMessage(error);
      log.error(this.connectionError);
    });
    connection.on('ready', () => {
      this.connectionError = undefined;
      log.ready();
      if (this.wasReady) this.reconnectHandler?.();
      this.wasReady = true;
    });
    connection.on('reconnecting', () => this.scriptsSent.clear());
    // A v5 cluster (5.9 and later) reports its nodes' connections with events of their own ('node-ready' only
    // at a node client's first connection: a node back after an outage is not reported ready). v4 reports a
    // node's errors as the cluster's own 'error', without its address.
    const nodes = new ClusterNodeLogs(logger, label);
    connection.on('node-error', (error: Error, node: ClusterNodeInfo) => {
      this.scriptsSent.clear();
      nodes.error(`${node.host}:${node.port}`, safeMessage(error));
    });
    connection.on('node-ready', (node: ClusterNodeInfo) => nodes.ready(`${node.host}:${node.port}`));
    connection.on('node-reconnecting', () => {
      this.scriptsSent.clear();
      // A cluster's pub/sub connection is one of its node clients, and reports no 'ready' when it is back:
      // told now, a subscriber subscribes again, which node-redis sends once that client is back (see
      // ReleaseSubscriber).
      this.reconnectHandler?.();
    });
  }

  runScript(
    script: LockScript,
    keys: readonly string[],
    args: readonly RedisArgument[],
    timeoutMs?: number,
  ): Promise<unknown> {
    const reply = this.runScriptUnbounded(script, keys, args);
    return timeoutMs === undefined ? reply : withTimeout(reply, timeoutMs);
  }

  private async runScriptUnbounded(
    script: LockScript,
    keys: readonly string[],
    args: readonly RedisArgument[],
  ): Promise<unknown> {
    const command = this.scriptCommandFor(script, keys, args);
    try {
      return await this.send(keys[0], command);
    } catch (error) {
      if (command[0] === 'EVAL' || !isNoScript(error)) throw error;
      return this.send(keys[0], scriptCommand('EVAL', script.lua, keys, args));
    }
  }

  async runScriptAndWait(
    script: LockScript,
    keys: readonly string[],
    args: readonly RedisArgument[],
    replicas: number,
    timeoutMs: number,
  ): Promise<ReplicatedReply> {
    // Sent in the same tick, so node-redis writes them together; on a Cluster WAIT goes to the node of
    // keys[0], i.e. the master that ran the script.
    const wait = ['WAIT', String(replicas), String(timeoutMs)];
    const command = this.scriptCommandFor(script, keys, args);
    let [scriptResult, waitResult] = await Promise.allSettled([this.send(keys[0], command), this.send(keys[0], wait)]);
    let resent = false;
    if (command[0] === 'EVALSHA' && scriptResult.status === 'rejected' && isNoScript(scriptResult.reason)) {
      // The WAIT above ran before the script did: send both again.
      [scriptResult, waitResult] = await Promise.allSettled([
        this.send(keys[0], scriptCommand('EVAL', script.lua, keys, args)),
        this.send(keys[0], wait),
      ]);
      resent = true;
    }
    if (scriptResult.status === 'rejected') throw scriptResult.reason;
    if (waitResult.status === 'rejected') throw waitResult.reason;
    return { reply: scriptResult.value, acks: Number(waitResult.value), resent };
  }

  /**
   * EVAL the first time this connection runs a script, EVALSHA after. An EVALSHA answered NOSCRIPT is resent
   * as EVAL a round trip later, behind whatever was sent meanwhile: a release followed by a waiter's attempt
   * on the same connection (a local hand-over) would then reach Redis attempt first, find the key still
   * held, and the release's wake-up would already be spent. NOSCRIPT remains possible after a server restart
   * (or on a Cluster master this connection has not sent the script to yet), and is then handled by a resend.
   */
  private scriptCommandFor(script: LockScript, keys: readonly string[], args: readonly RedisArgument[]): string[] {
    if (this.scriptsSent.has(script.sha)) return scriptCommand('EVALSHA', script.sha, keys, args);
    this.scriptsSent.add(script.sha);
    return scriptCommand('EVAL', script.lua, keys, args);
  }

  async exists(key: string): Promise<number> {
    return Number(await this.send(key, ['EXISTS', key]));
  }

  async ping(): Promise<void> {
    await this.send(undefined, ['PING']);
  }

  onMessage(handler: (channel: string, message: string) => void): void {
    this.messageHandler = handler;
  }

  onReconnect(handler: () => void): void {
    this.reconnectHandler = handler;
  }

  async subscribe(channel: string): Promise<void> {
    await this.open();
    await this.track(this.connection.subscribe(channel, this.listener));
  }

  async unsubscribe(channel: string): Promise<void> {
    if (!this.connection.isOpen) return;
    await this.track(this.connection.unsubscribe(channel));
  }

  duplicate(options: { readonly subscriber?: boolean } = {}): NodeRedisLockClient {
    const label = options.subscriber ? `${this.label} (subscriber)` : this.label;
    return new NodeRedisLockClient(duplicateNodeRedis(this.connection), { label, logger: this.logger });
  }

  close(): Promise<void> {
    this.closing ??= this.shutDown();
    return this.closing;
  }

  /**
   * Lets the replies of commands already sent arrive (1 s at most), then drops the connection. Not QUIT
   * (v4) or close() (v5): once either has begun, node-redis refuses to destroy the socket, so a server that
   * stopped answering would keep it open, and deliver stale replies into it when it wakes up.
   */
  private async shutDown(): Promise<void> {
    const connection = this.connection;
    if (this.inFlight > 0) {
      await new Promise<void>((resolve) => {
        this.idle = resolve;
        setTimeout(resolve, QUIET_TIMEOUT_MS).unref();
      });
    }
    if (!connection.isOpen) return;
    try {
      if (connection.destroy) connection.destroy();
      else await connection.disconnect?.();
    } catch {
      // Closed meanwhile.
    }
  }

  private send(firstKey: string | undefined, args: string[]): Promise<unknown> {
    let reply: Promise<unknown>;
    if (this.isCluster) {
      reply = this.sendToCluster(firstKey, args);
    } else {
      // A client queues commands sent while it connects: no need to wait for the connection here.
      if (!this.connecting) void this.open();
      reply = (this.connection as NodeRedisClient).sendCommand(args);
    }
    return this.track(reply);
  }

  /** Counts `reply` in flight until it settles (close() lets such replies arrive first). */
  private track<T>(reply: Promise<T>): Promise<T> {
    this.inFlight++;
    const settled = (): void => {
      if (--this.inFlight === 0) this.idle?.();
    };
    reply.then(settled, settled);
    return reply;
  }

  private async sendToCluster(firstKey: string | undefined, args: string[]): Promise<unknown> {
    await this.open();
    // Not read-only: an EXISTS answered by a replica could miss a lease just granted on the master.
    return (this.connection as NodeRedisCluster).sendCommand(firstKey, false, args);
  }

  /** Connects on first use; the promise settles once connected (or the first attempt failed). */
  private open(): Promise<void> {
    this.connecting ??= this.connection.connect().then(
      () => undefined,
      (error: unknown) => {
        // Let the next command try again (commands sent meanwhile fail or time out on their own).
        this.connecting = undefined;
        this.logger.warn(`Redis ${this.label}: cannot connect (${safeMessage(error)})`);
      },
    );
    return this.connecting;
  }
}

/**
 * A new, unconnected node-redis client or cluster with `connection`'s options (URL, socket and TLS, auth,
 * database, RESP version, reconnect strategy). A v4 client in legacy mode is duplicated in promise mode:
 * the adapter uses the promise API.
 */
export function duplicateNodeRedis(connection: NodeRedisConnection): NodeRedisConnection {
  return connection.options?.legacyMode ? connection.duplicate({ legacyMode: false }) : connection.duplicate();
}

function scriptCommand(
  command: 'EVALSHA' | 'EVAL',
  script: string,
  keys: readonly string[],
  args: readonly RedisArgument[],
): string[] {
  // node-redis accepts only strings (and buffers) as arguments.
  return [command, script, String(keys.length), ...keys, ...args.map(String)];
}

function isNoScript(error: unknown): boolean {
  return error instanceof Error && error.message.startsWith('NOSCRIPT');
}
