// The LockClient of ioredis 5 and 6, and of iovalkey, its API-identical fork.
import { safeMessage } from '../../../errors/safe-cause';
import { withTimeout } from '../../../util/with-timeout';
import { ClusterNodeLogs, ConnectionLog } from '../connection-log';
import type { LockClient, LockClientOptions, RedisArgument, ReplicatedReply } from '../lock-client';
import type { LockScript } from '../lock-script';
import { type ClusterNodeConnection, type IoredisConnection, duplicateIoredis } from './ioredis-connection';
import { IoredisInternals, onClusterSubscriberMoved } from './ioredis-internals';
import { quitOrDisconnect } from './quit';
import { ScriptSender, isNoScript } from './script-sender';
import { TickBatch } from './tick-batch';
import { WriteCoalescer } from './write-coalescer';

/** A command defineCommand added: `numkeys, ...keys, ...args`. */
type DefinedScript = (numKeys: number, ...keysAndArgs: RedisArgument[]) => Promise<unknown>;

/**
 * The ioredis adapter. The connection is always this adapter's own (made by the module or duplicated from a
 * lent client), so registering commands never touches a user's client, and the writes of one tick are
 * coalesced (see WriteCoalescer). On a standalone `Redis` whose internals have the shape IoredisInternals
 * checks (every connection the module makes from options, and the duplicate of a lent client, of whichever
 * copy of ioredis 5 or 6, or of iovalkey: built on that copy's own Command class), scripts go as commands built
 * directly (ScriptSender) and the calls of one tick as one batch (TickBatch). A Cluster, or an ioredis whose
 * internals changed, goes through ioredis' public API: scripts registered with defineCommand (EVALSHA with the
 * SHA computed client-side, EVAL on NOSCRIPT).
 */
export class IoredisLockClient implements LockClient {
  readonly family = 'ioredis';
  connectionError: string | undefined;
  private readonly label: string;
  private readonly options: LockClientOptions;
  private readonly internals: IoredisInternals;
  private readonly writes: WriteCoalescer;
  /** Set when the connection takes this library's own commands (IoredisInternals.ownCommands). */
  private readonly sender: ScriptSender | undefined;
  private readonly tickBatch: TickBatch | undefined;
  /** The scripts registered with defineCommand (the public-API path). */
  private readonly defined = new Set<string>();
  private messageHandler: ((channel: string, message: string) => void) | undefined;
  private closing: Promise<void> | undefined;
  /** Ready once already: a 'ready' from now on follows a lost connection (see onReconnect). */
  private wasReady = false;
  private reconnectHandler: (() => void) | undefined;

  constructor(
    private readonly connection: IoredisConnection,
    options: LockClientOptions,
  ) {
    this.options = options;
    const { label, logger } = options;
    this.label = label;
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
      if (this.wasReady) this.reconnectHandler?.();
      this.wasReady = true;
    });
    if (connection.isCluster === true) {
      this.logClusterNodes(connection, new ClusterNodeLogs(logger, label));
      // Its SUBSCRIBEs go to one node connection, which the Cluster replaces when it ends: a reconnect too.
      onClusterSubscriberMoved(connection, () => this.reconnectHandler?.());
    }
    connection.on('message', (channel: string, message: string) => this.messageHandler?.(channel, message));
    this.internals = new IoredisInternals(connection);
    this.writes = new WriteCoalescer(this.internals, options.writeFirstWhenIdle);
    if (this.internals.ownCommands) {
      this.sender = new ScriptSender(connection, this.internals, this.writes);
      this.tickBatch = new TickBatch(this.sender, this.writes, logger, label);
      this.tickBatch.readServerInfo(connection, this.internals);
    }
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

  get isCluster(): boolean {
    return this.connection.isCluster === true;
  }

  runScript(
    script: LockScript,
    keys: readonly string[],
    args: readonly RedisArgument[],
    timeoutMs?: number,
  ): Promise<unknown> {
    if (this.tickBatch) return this.tickBatch.run(script, keys, args, timeoutMs);
    if (!this.defined.has(script.name)) {
      this.connection.defineCommand(script.name, { lua: script.lua });
      this.defined.add(script.name);
    }
    this.writes.beforeWrite();
    const command = (this.connection as unknown as Record<string, DefinedScript>)[script.name];
    const reply = command.call(this.connection, keys.length, ...keys, ...args);
    return timeoutMs === undefined ? reply : withTimeout(reply, timeoutMs);
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
    // A connection that takes our own commands sends the script as a ScriptCommand: in full the first time on a
    // socket, as a plain call does, so it is answered NOSCRIPT, and resent behind commands made meanwhile (see
    // resent), only when the server lost its scripts under a live connection (a SCRIPT FLUSH; Redis 7.4+ also
    // evicts old EVAL scripts). Any other connection sends by SHA first (see runScript).
    const send = async (byHash: boolean): Promise<[Error | null, unknown][]> => {
      this.tickBatch?.flush();
      const pipeline = this.connection.pipeline();
      if (!byHash) pipeline.eval(script.lua, keys.length, ...keys, ...args);
      else if (!this.sender?.queueOnPipeline(pipeline, script, keys, args))
        pipeline.evalsha(script.sha, keys.length, ...keys, ...args);
      pipeline.call('WAIT', replicas, timeoutMs);
      this.writes.beforeWrite();
      return (await pipeline.exec()) ?? [];
    };
    let results = await send(true);
    let resent = false;
    if (isNoScript(results[0]?.[0])) {
      this.sender?.forgetScripts();
      results = await send(false);
      resent = true;
    }
    // On a Cluster, ioredis follows a redirection of a pipeline only when every command in it failed alike
    // (or the others are read-only); here WAIT, which has no key, succeeds on whichever node took the
    // pipeline, so a MOVED of the script comes back as is, and nothing learns the new owner of the slot:
    // after a master failover every renewal under minReplicas would go on answering MOVED for the whole lease,
    // while single commands (which refresh the slot map on MOVED) reach the promoted replica at once. So the
    // map is refreshed here, and the pipeline sent again once (MOVED: the script did not run). A second MOVED
    // (a node not yet told of the promotion) is the caller's to retry, as is CLUSTERDOWN during the failover.
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
    this.tickBatch?.flush();
    return this.connection.exists(key);
  }

  async ping(): Promise<void> {
    this.tickBatch?.flush();
    await this.connection.ping();
  }

  onMessage(handler: (channel: string, message: string) => void): void {
    this.messageHandler = handler;
  }

  onReconnect(handler: () => void): void {
    this.reconnectHandler = handler;
  }

  async subscribe(channel: string): Promise<void> {
    await this.connection.subscribe(channel);
  }

  async unsubscribe(channel: string): Promise<void> {
    await this.connection.unsubscribe(channel);
  }

  duplicate(options: { readonly subscriber?: boolean } = {}): IoredisLockClient {
    const label = options.subscriber ? `${this.label} (subscriber)` : this.label;
    return new IoredisLockClient(duplicateIoredis(this.connection, options), { ...this.options, label });
  }

  /** Fetches a Cluster's slot map anew; false when this is no Cluster (nothing to refresh). */
  private refreshSlots(): Promise<boolean> {
    const connection = this.connection;
    if (!this.isCluster || typeof connection.refreshSlotsCache !== 'function') return Promise.resolve(false);
    // No node answering is no reason to give up here: the pipeline sent again then fails as it would have.
    return new Promise((resolve) => connection.refreshSlotsCache?.(() => resolve(true)));
  }

  close(): Promise<void> {
    this.tickBatch?.flush();
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
}

function isMoved(error: Error | null | undefined): boolean {
  return error != null && String(error.message).startsWith('MOVED ');
}
