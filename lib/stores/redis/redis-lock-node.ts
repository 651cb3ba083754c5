// One Redis deployment as the stores use it: its lock operations, each a script on the node's own connection.
import { Logger } from '@nestjs/common';
import { safeMessage } from '../../errors/safe-cause';
import type { MinReplicas, RedisConnection, RedlockNode } from '../../options/lock-options.interface';
import { type LockClient, createLockClient } from '../clients';
import type { AcquireRequest, LockKeyNames, LockShape } from '../lock-store.interface';
import type { TokenOrder } from '../redlock/token-order';
import { isPermit } from '../shared/lock-shapes';
import { leaseTtl } from '../shared/timing';
import { withTimeout } from '../../util/with-timeout';
import { withdrawalMessage } from '../shared/withdrawal-message';
import { NodeAcquire, type PermitFenceStride } from './node-acquire';
import { NodeConnection } from './node-connection';
import { foreignData } from './node-errors';
import {
  type NodeAcquireReply,
  type NodeHandoverReply,
  type NodeLockState,
  forceReleaseReply,
  handoverReply,
  inspectReply,
} from './node-replies';
import {
  EXTEND,
  FORCE_RELEASE,
  HANDOVER,
  INSPECT,
  PERMIT_EXTEND,
  PERMIT_RAISE_FENCE,
  RAISE_FENCES,
  SERVER_ID,
  WITHDRAW,
} from './scripts';
import { releaseCall } from './release-command';
import { type ReleaseHandler, ReleaseSubscriber } from './subscriber';

export interface RedisLockNodeOptions {
  /** How logs and errors name the node: 'redis', or `nodes[i]` on Redlock. */
  readonly label: string;
  readonly minReplicas?: MinReplicas;
  /**
   * A Redlock node's: its store decides an attempt once a quorum answered and sends the undo, release or
   * withdrawal to the other nodes at once, counting on each connection to run them after the attempt, which
   * a writer's second script needs the token's order for (see TokenOrder). One Redis has none.
   */
  readonly order?: TokenOrder;
  /** A Redlock node's stride for permit fences (see PERMIT_ACQUIRE_SCRIPT): none on one Redis. */
  readonly permitFenceStride?: PermitFenceStride;
}

/** A release as a node sends it. */
export interface NodeRelease {
  readonly keys: readonly LockKeyNames[];
  readonly token: string;
  /** ms the keys stay held, still by the token, before they expire (minHold); 0 or absent: deleted now. */
  readonly holdFor?: number;
  readonly shape?: LockShape;
  /** Announce the release of a mutex even where no refused attempt marked the key awaited (see RELEASE_SCRIPT). */
  readonly announce?: boolean;
}

/** A withdrawal of a writer's intent as a node sends it. */
export interface NodeWithdrawal {
  /** Wake the readers the intent kept waiting. */
  readonly announce: boolean;
  /** What the withdrawal is announced with (see withdrawalMessage); by default the writer's first. */
  readonly message?: string;
}

/**
 * The lock scripts on one Redis deployment (a standalone server, a Sentinel-managed master or a Cluster),
 * through a LockClient of the module's own: made from a URL or options, or duplicated from a client the
 * user lent (which is never used for a command, nor closed). Release announcements arrive on a subscriber
 * connection duplicated from it on first use. close() closes both. How each script is sent (its timeout,
 * WAIT with minReplicas, the refusal once closed) is NodeConnection's; an acquire attempt is NodeAcquire's.
 */
export class RedisLockNode {
  readonly label: string;
  private readonly logger = new Logger('LockStore');
  private readonly client: LockClient;
  private readonly connection: NodeConnection;
  private readonly acquirer: NodeAcquire;
  private readonly subscriber: ReleaseSubscriber;
  private readonly minReplicas: MinReplicas | undefined;
  private readonly order: TokenOrder | undefined;

  constructor(connection: RedisConnection | RedlockNode, options: RedisLockNodeOptions) {
    this.label = options.label;
    this.minReplicas = options.minReplicas;
    this.order = options.order;
    // A Redlock node writes each tick's commands at its end (see IoredisLockClient's coalesceWrites).
    this.client = createLockClient(connection, {
      label: options.label,
      logger: this.logger,
      writeFirstWhenIdle: !options.order,
    });
    this.connection = new NodeConnection(this.client, options.minReplicas, options.order);
    this.acquirer = new NodeAcquire(this.connection, options);
    this.subscriber = new ReleaseSubscriber(this.client);
  }

  get isCluster(): boolean {
    return this.client.isCluster;
  }

  /**
   * Whether the last command on this node failed (see NodeConnection.failing). A Redlock verdict taken before
   * this node answered then presumes it down rather than merely slower than the others.
   */
  get failing(): boolean {
    return this.connection.failing;
  }

  /**
   * What a failure on this node says, with the connection's last error when the failure itself does not
   * (ioredis' "Reached the max retries per request limit", a timeout): `connect ECONNREFUSED …` is the cause
   * a user can act on.
   */
  describeFailure(error: unknown): string {
    const message = safeMessage(error);
    const connectionError = this.client.connectionError;
    return connectionError === undefined || message.includes(connectionError)
      ? message
      : `${message}; the connection's last error: ${connectionError}`;
  }

  /** One attempt (see NodeAcquire), its ttl rounded as leaseTtl does. */
  acquire(request: AcquireRequest, timeoutMs: number): Promise<NodeAcquireReply> {
    return this.acquirer.acquire(request, timeoutMs);
  }

  /**
   * Returns how many of the keys still held the token and were released: deleted, or with `holdFor` > 0 left
   * to expire in that many ms (minHold). No WAIT: a release that a failover loses only leaves a lease to expire
   * on its own, which delays the next holder and never admits two. A mutex's release is announced when a
   * refused attempt marked the key awaited, or with `announce` (callers of the releasing process wait for the
   * keys: some may sleep without having attempted, see RELEASE_SCRIPT); a permit's always is.
   */
  release(release: NodeRelease, timeoutMs: number): Promise<number> {
    const order = this.order;
    if (order) return order.inOrder(release.token, 'take-back', () => this.releaseNow(release, timeoutMs));
    return this.releaseNow(release, timeoutMs);
  }

  private releaseNow(
    { keys, token, holdFor = 0, shape, announce = false }: NodeRelease,
    timeoutMs: number,
  ): Promise<number> {
    // Not async (a hot path): like run(), it throws StoreClosedError synchronously once closed.
    const { script, names, args } = releaseCall(keys, token, holdFor, shape, announce);
    return this.connection.run(script, names, args, timeoutMs, keys).then(Number);
  }

  /**
   * Releases a single-key mutex held by `token` and grants it to `to` for `ttl` ms in the same step (see
   * HANDOVER_SCRIPT). Never with minReplicas: the store only hands over when no WAIT is asked.
   */
  async handOver(
    key: LockKeyNames,
    token: string,
    to: string,
    ttl: number,
    timeoutMs: number,
  ): Promise<NodeHandoverReply> {
    return handoverReply(
      (await this.connection.run(HANDOVER, [key.lockKey, key.fenceKey], [token, to, ttl, key.channel], timeoutMs, [
        key,
      ])) as unknown[],
    );
  }

  /**
   * Takes back a grant whose call ends without it (its answer came too late, or never, or too few replicas
   * acknowledged it), on one Redis: see NodeAcquire.takeBack. A Redlock node undoes it silently instead.
   */
  takeBack(keys: readonly LockKeyNames[], token: string, timeoutMs: number, shape?: LockShape): Promise<void> {
    if (this.order) return this.undo(keys, token, timeoutMs, shape);
    return this.acquirer.takeBack(keys, token, timeoutMs, shape);
  }

  /** Takes back an attempt that did not become a lock, silently (see UNDO_SCRIPT). */
  undo(keys: readonly LockKeyNames[], token: string, timeoutMs: number, shape?: LockShape): Promise<void> {
    const order = this.order;
    if (order) return order.inOrder(token, 'take-back', () => this.acquirer.undo(keys, token, timeoutMs, shape));
    return this.acquirer.undo(keys, token, timeoutMs, shape);
  }

  async extend(request: AcquireRequest, timeoutMs: number): Promise<boolean> {
    const { keys, token } = request;
    const permit = isPermit(request.shape);
    const names = permit ? [keys[0].lockKey, keys[0].permitsKey] : keys.map((key) => key.lockKey);
    // A renewal too few replicas saw does not count: the lease keeps the validity it had (and retries).
    const reply = await this.connection.write(
      permit ? PERMIT_EXTEND : EXTEND,
      names,
      [token, leaseTtl(request.ttl)],
      timeoutMs,
      keys,
      (answer) => Number(answer) === 1,
      'renewal',
    );
    return Number(reply) === 1;
  }

  /** Removes a writer's intent (see WITHDRAW_SCRIPT); with `announce`, wakes the readers it kept waiting. */
  withdraw(key: LockKeyNames, token: string, timeoutMs: number, withdrawal: NodeWithdrawal): Promise<void> {
    const order = this.order;
    if (order) return order.inOrder(token, 'withdrawal', () => this.withdrawNow(key, token, timeoutMs, withdrawal));
    return this.withdrawNow(key, token, timeoutMs, withdrawal);
  }

  private async withdrawNow(
    key: LockKeyNames,
    token: string,
    timeoutMs: number,
    { announce, message = withdrawalMessage(token) }: NodeWithdrawal,
  ): Promise<void> {
    await this.connection.run(WITHDRAW, [key.writerKey], [token, announce ? 1 : 0, key.channel, message], timeoutMs, [
      key,
    ]);
  }

  /** Whether a writer's second script of `token` is in flight on this Redlock node (see TokenOrder). */
  secondScriptInFlight(token: string): boolean {
    return this.order?.inFlight(token) === true;
  }

  /**
   * Withdraws `token`'s intent, announced with `message`, if `recorded` (this Redlock node's late answer to the
   * token's attempt, whose second script is in flight: see secondScriptInFlight) says it was recorded. Made
   * now, in the token's order: behind that second script, and so ahead of the token's next attempt, whose
   * fresh intent it must not remove. One Redis has no second script in flight: nothing to do there.
   */
  withdrawIfRecorded(
    key: LockKeyNames,
    token: string,
    timeoutMs: number,
    recorded: Promise<boolean>,
    message: string,
  ): Promise<void> {
    const order = this.order;
    if (!order) return Promise.resolve();
    const withdrawal: NodeWithdrawal = { announce: true, message };
    return order.chained(token, () =>
      recorded.then((wasRecorded) =>
        wasRecorded ? order.sendChained(() => this.withdrawNow(key, token, timeoutMs, withdrawal)) : undefined,
      ),
    );
  }

  /**
   * Redlock's fence write-back: raises each key's fence counter on this node to at least `fences[i]`,
   * provided this node still holds every key with `token`. True when it did (or the counters were already
   * that high); false when the node no longer holds the lock. A permit or reader also records `fences[0]` as
   * its own fence on this node (PERMIT_RAISE_FENCE_SCRIPT), which inspect reports.
   */
  async raiseFences(
    keys: readonly LockKeyNames[],
    token: string,
    fences: readonly number[],
    timeoutMs: number,
    shape?: LockShape,
  ): Promise<boolean> {
    const names: string[] = [];
    for (const key of keys) names.push(key.lockKey);
    for (const key of keys) names.push(key.fenceKey);
    const permit = isPermit(shape);
    if (permit) names.push(keys[0].permitsKey);
    const script = permit ? PERMIT_RAISE_FENCE : RAISE_FENCES;
    const reply = await this.connection.write(
      script,
      names,
      [token, ...fences],
      timeoutMs,
      keys,
      (answer) => Number(answer) === 1,
      'fence',
    );
    if (Array.isArray(reply)) throw foreignData(keys[Number(reply[1]) - 1], 'fence');
    return Number(reply) === 1;
  }

  /**
   * Records `fence` as a permit's or reader's own on this node, for inspect (PERMIT_RAISE_FENCE_SCRIPT, which
   * also raises the counter to it if lower), while the node still holds it. Unlike raiseFences it never waits
   * for replicas: nothing the fence's order rests on is written here (see recordPermitFence in redlock-attempt.ts).
   */
  async recordPermitFence(key: LockKeyNames, token: string, fence: number, timeoutMs: number): Promise<void> {
    // Past the command's own bookkeeping (run): a record that fails or times out says nothing the next verdict
    // should go by (`failing`), and nobody waits for it.
    this.connection.refuseWhenClosed();
    await this.client.runScript(
      PERMIT_RAISE_FENCE,
      [key.lockKey, key.fenceKey, key.permitsKey],
      [token, fence],
      timeoutMs,
    );
  }

  /** What holds `key` on this node, or null when nothing does (see INSPECT_SCRIPT). */
  async inspect(key: LockKeyNames, timeoutMs: number): Promise<NodeLockState | null> {
    return inspectReply(
      (await this.connection.run(INSPECT, [key.lockKey, key.fenceKey, key.permitsKey], [], timeoutMs, [
        key,
      ])) as unknown[],
    );
  }

  /** Deletes every lease at `key` whoever holds it, announcing each release: the values evicted. */
  async forceRelease(key: LockKeyNames, timeoutMs: number): Promise<string[]> {
    return forceReleaseReply(
      await this.connection.run(FORCE_RELEASE, [key.lockKey, key.permitsKey], [key.channel], timeoutMs, [key]),
    );
  }

  async exists(key: LockKeyNames, timeoutMs: number): Promise<boolean> {
    this.connection.refuseWhenClosed();
    const count = await this.connection.answered(withTimeout(this.client.exists(key.lockKey), timeoutMs));
    return count === 1;
  }

  async ping(timeoutMs: number): Promise<void> {
    this.connection.refuseWhenClosed();
    // Not recorded in `failing`, which is about lock commands: a node that answers PING but times out
    // scripts would be declared healthy by every health probe.
    await withTimeout(this.client.ping(), timeoutMs);
  }

  /**
   * The run_id of the server this node reaches (see DistinctServers). Not recorded in `failing`: a node that
   * refuses INFO (an ACL) still serves locks.
   */
  async serverId(timeoutMs: number): Promise<string> {
    this.connection.refuseWhenClosed();
    return String(await this.client.runScript(SERVER_ID, [], [], timeoutMs));
  }

  /**
   * Where release announcements go; set once by the store. Without a token: announcements on the channel may
   * have been missed (the subscriber connection was lost), now subscribed again.
   */
  onRelease(handler: ReleaseHandler): void {
    this.subscriber.onRelease(handler);
  }

  async subscribe(channel: string, timeoutMs: number): Promise<void> {
    this.connection.refuseWhenClosed();
    await withTimeout(this.subscriber.subscribe(channel), timeoutMs);
  }

  unsubscribe(channel: string): Promise<void> {
    return this.subscriber.unsubscribe(channel);
  }

  /**
   * Closes the connections this node opened (its lock connection and subscriber); a lent client stays open.
   * New work is refused at once. A Redlock node's chains run out first (see TokenOrder.drain), each chained
   * command with minReplicas taking up to its WAIT's timeout on top of its own.
   */
  async close(): Promise<void> {
    this.connection.close();
    if (this.order) await this.order.drain(2 * (this.minReplicas?.timeout ?? 0), () => this.connection.failing);
    await Promise.all([this.subscriber.close(), this.client.close()]);
  }
}
