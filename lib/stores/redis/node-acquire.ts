// One acquire attempt on a node: the mutex, writer and permit scripts, and the take-back of a grant too few replicas
// acknowledged.
import { ReplicasNotAcknowledgedError } from '../../errors/replicas-not-acknowledged.error';
import { StoreClosedError } from '../../errors/store-closed.error';
import type { MinReplicas } from '../../options/lock-options.interface';
import type { LockScript, RedisArgument } from '../clients';
import type { AcquireRequest, LockKeyNames, LockShape } from '../lock-store.interface';
import type { PlainAttempt, TokenOrder } from '../redlock/token-order';
import { isPermit, recordOf } from '../shared/lock-shapes';
import { leaseTtl } from '../shared/timing';
import type { NodeConnection } from './node-connection';
import {
  type AcquireScriptReply,
  type NodeAcquireReply,
  isGrant,
  mutexReply,
  permitReply,
  permitsHoldKey,
  refusedByPermits,
  writerReply,
} from './node-replies';
import { releaseCall } from './release-command';
import { ACQUIRE, PERMIT_ACQUIRE, PERMIT_UNDO, UNDO, WRITE_ACQUIRE } from './scripts';

/**
 * How a Redlock node numbers the fences it hands permits and readers: in blocks of `step` (the number of nodes),
 * each value ≡ `residue` (the node's place in the list) modulo `step`, so that no two nodes ever hand out the
 * same value (see PERMIT_ACQUIRE_SCRIPT).
 */
export interface PermitFenceStride {
  readonly step: number;
  readonly residue: number;
}

/** What an attempt needs to know of its node beside its connection. */
export interface AcquireSettings {
  readonly minReplicas?: MinReplicas;
  /** A Redlock node's: its token order (see TokenOrder); one Redis has none. */
  readonly order?: TokenOrder;
  /** A Redlock node's stride for permit fences (see PERMIT_ACQUIRE_SCRIPT): none on one Redis. */
  readonly permitFenceStride?: PermitFenceStride;
}

/**
 * A node's acquire attempts: a mutex (also a read-write lock's writer) through ACQUIRE_SCRIPT, a permit or
 * reader through PERMIT_ACQUIRE_SCRIPT. A single-key writer that met readers, or was queued behind them before,
 * goes through WRITE_ACQUIRE_SCRIPT (one more round trip the first time, only then). On a Redlock node the
 * attempt's first script is tracked while unanswered, and a writer's second script runs in the token's chain
 * (see TokenOrder).
 */
export class NodeAcquire {
  constructor(
    private readonly connection: NodeConnection,
    private readonly settings: AcquireSettings,
  ) {}

  acquire(request: AcquireRequest, timeoutMs: number): Promise<NodeAcquireReply> {
    // Not async (the hot path of every lock): like run(), it throws StoreClosedError synchronously once closed.
    const ttl = leaseTtl(request.ttl);
    if (isPermit(request.shape)) return this.acquirePermit(request, ttl, timeoutMs, request.shape);
    const order = this.settings.order;
    if (!order) return this.acquireNow(request, ttl, timeoutMs);
    // A Redlock node's attempt waits behind the token's writer second script and what queued behind it (an undo
    // sent now would otherwise delete this attempt's grant: see TokenOrder).
    if (order.inFlight(request.token)) {
      // New work, refused once closed, although the chain's own commands are not.
      this.connection.refuseWhenClosed();
      const waitMs = timeoutMs + (this.settings.minReplicas?.timeout ?? 0);
      return order.behind(request.token, waitMs, () =>
        this.connection.isClosed
          ? Promise.reject(new StoreClosedError())
          : this.acquireNow(request, ttl, timeoutMs, order, order.attempt('behind-chain')),
      );
    }
    return this.acquireNow(request, ttl, timeoutMs, order, order.attempt('direct'));
  }

  /**
   * Takes back a grant whose call ends without it (unacknowledged by enough replicas, answered too late or not
   * at all) as its release: compare-and-delete, announced where a refused attempt marked the key awaited (a
   * permit's always). Waiters refused for it sleep until a release of it or its lease's end, and its caller,
   * failing, never releases it. A Redlock node's grant is undone silently instead (see undo): its caller may
   * attempt again with the same token, whose release must not be counted before it happened (the hubs count
   * a token once).
   */
  async takeBack(keys: readonly LockKeyNames[], token: string, timeoutMs: number, shape?: LockShape): Promise<void> {
    if (this.settings.order) return this.undo(keys, token, timeoutMs, shape);
    const { script, names, args } = releaseCall(keys, token, 0, shape, false);
    await this.connection.run(script, names, args, timeoutMs, keys);
  }

  /** Takes back an attempt that did not become a lock, silently (see UNDO_SCRIPT). */
  async undo(keys: readonly LockKeyNames[], token: string, timeoutMs: number, shape?: LockShape): Promise<void> {
    if (isPermit(shape)) {
      await this.connection.run(PERMIT_UNDO, [keys[0].lockKey, keys[0].permitsKey], [token], timeoutMs, keys);
      return;
    }
    await this.connection.run(
      UNDO,
      keys.map((key) => key.lockKey),
      [token],
      timeoutMs,
      keys,
    );
  }

  /** A mutex's or writer's attempt; `attempt`, its first script on a Redlock node (see TokenOrder.whileUnanswered). */
  private acquireNow(
    request: AcquireRequest,
    ttl: number,
    timeoutMs: number,
    order?: TokenOrder,
    attempt?: PlainAttempt,
  ): Promise<NodeAcquireReply> {
    const { keys, token } = request;
    if (request.queued && keys.length === 1) {
      const written = this.acquireWrite(request, ttl, timeoutMs, attempt);
      return order && attempt ? order.whileUnanswered(token, attempt, written, (reply) => reply) : written;
    }
    const names: string[] = [];
    for (const key of keys) names.push(key.lockKey);
    for (const key of keys) names.push(key.fenceKey);
    for (const key of keys) names.push(key.awaitedKey);
    // A last attempt leaves no awaited mark (see ACQUIRE_SCRIPT); the others send two arguments, and a Redlock
    // round's fence floor comes fourth.
    const floor = request.fenceFloor;
    const args: RedisArgument[] =
      floor !== undefined ? [token, ttl, request.final ? 0 : 1, floor] : request.final ? [token, ttl, 0] : [token, ttl];
    if (!order || !attempt) {
      return this.granting(ACQUIRE, names, args, keys, token, timeoutMs).then((reply) =>
        this.acquired(reply as AcquireScriptReply, request, ttl, timeoutMs),
      );
    }
    const sent = this.granting(ACQUIRE, names, args, keys, token, timeoutMs, undefined, attempt);
    return order.whileUnanswered(token, attempt, sent, (reply) =>
      this.acquired(reply as AcquireScriptReply, request, ttl, timeoutMs, attempt),
    );
  }

  /** ACQUIRE_SCRIPT's answer: granted, busy, or (permits at the key) the writer's path. */
  private acquired(
    reply: AcquireScriptReply,
    request: AcquireRequest,
    ttl: number,
    timeoutMs: number,
    attempt?: PlainAttempt,
  ): NodeAcquireReply | Promise<NodeAcquireReply> {
    if (!permitsHoldKey(reply)) return mutexReply(reply, request.keys);
    // Permits hold the key: readers (this is their writer) or a semaphore (a mix, refused). A writer for
    // several keys only waits: queueing it on one key would keep readers of that key out for nothing; nor
    // does a Redlock node's attempt already undone or released here (see TokenOrder.inOrder).
    if (request.keys.length === 1 && !attempt?.superseded) {
      // The first script wrote nothing: once close() has begun, the attempt ends here.
      if (this.connection.isClosed) throw new StoreClosedError();
      const write = (): Promise<NodeAcquireReply> => this.acquireWrite(request, ttl, timeoutMs);
      // The token's commands from now on wait for this script; an attempt that itself waited in the token's
      // chain already ends it, its second script included.
      const order = this.settings.order;
      return order && attempt && !attempt.inChain ? order.chained(request.token, write) : write();
    }
    return refusedByPermits(reply);
  }

  /**
   * A writer on a key that readers may hold (see WRITE_ACQUIRE_SCRIPT). `attempt` when it is a Redlock node's
   * first script (a writer queued before); the second script runs in the token's chain instead.
   */
  private async acquireWrite(
    request: AcquireRequest,
    ttl: number,
    timeoutMs: number,
    attempt?: PlainAttempt,
  ): Promise<NodeAcquireReply> {
    const key = request.keys[0];
    const names = [key.lockKey, key.fenceKey, key.permitsKey, key.writerKey, key.awaitedKey];
    // final: the caller attempts no more, so no intent is recorded (see AcquireRequest.final); a Redlock node
    // asks for the readers that refuse it by name.
    const args = [request.token, ttl, request.final ? 0 : 1, this.settings.order ? 1 : 0];
    if (request.fenceFloor !== undefined) args.push(request.fenceFloor);
    const reply = (await this.granting(
      WRITE_ACQUIRE,
      names,
      args,
      [key],
      request.token,
      timeoutMs,
      undefined,
      attempt,
    )) as unknown[];
    return writerReply(reply, key);
  }

  /** A semaphore's permit or a reader (see PERMIT_ACQUIRE_SCRIPT). */
  private async acquirePermit(
    request: AcquireRequest,
    ttl: number,
    timeoutMs: number,
    shape: Exclude<LockShape, { kind: 'mutex' }>,
  ): Promise<NodeAcquireReply> {
    const key = request.keys[0];
    const token = request.token;
    const names = [key.lockKey, key.fenceKey, key.permitsKey, key.writerKey, key.awaitedKey];
    const limit = shape.kind === 'semaphore' ? shape.limit : 0;
    // A Redlock node's permit attempt is tracked only for its take-back (see TokenOrder.mustTakeBack), which
    // minReplicas alone asks for: a permit has no second script.
    const { order, minReplicas, permitFenceStride: stride } = this.settings;
    const attempt = order && minReplicas ? order.attempt('direct') : undefined;
    const mayWait = request.final ? 0 : 1;
    // A Redlock round's floor ('': none, the server's clock), then a node's stride.
    const args: RedisArgument[] = [token, ttl, recordOf(shape), limit, mayWait];
    if (stride || request.fenceFloor !== undefined) args.push(request.fenceFloor ?? '');
    if (stride) args.push(stride.step, stride.residue);
    const sent = this.granting(PERMIT_ACQUIRE, names, args, [key], token, timeoutMs, shape, attempt);
    const reply = (await (order && attempt
      ? order.whileUnanswered(token, attempt, sent, (answer) => answer)
      : sent)) as unknown[];
    return permitReply(reply, key, shape);
  }

  /**
   * Runs a granting script; a grant too few replicas acknowledged is taken back before rejecting, unless
   * `attempt` (a Redlock node's first script) was already taken back by an undo or release sent while it was
   * unanswered: that one ran right after it on the connection, and the token's next attempt may have run
   * since, whose grant a take-back sent now would delete (see TokenOrder.mustTakeBack).
   */
  private granting(
    script: LockScript,
    names: readonly string[],
    args: readonly RedisArgument[],
    keys: readonly LockKeyNames[],
    token: string,
    timeoutMs: number,
    shape?: LockShape,
    attempt?: PlainAttempt,
  ): Promise<unknown> {
    // Not async: without minReplicas this is the acquire hot path, and each promise layer costs.
    if (!this.settings.minReplicas) return this.connection.run(script, names, args, timeoutMs, keys);
    return this.connection
      .write(script, names, args, timeoutMs, keys, isGrant, 'grant')
      .catch(async (error: unknown) => {
        // Granted, but on too few replicas to survive a failover: take it back before saying so. Not through the
        // node's undo: this may be the writer's second script, which that undo would wait for (see TokenOrder).
        if (
          error instanceof ReplicasNotAcknowledgedError &&
          (!attempt || this.settings.order?.mustTakeBack(attempt, token, error.resent))
        ) {
          // Sent even once close() has begun: it finishes an attempt made before.
          await this.connection
            .sendPastClose(() => this.takeBack(keys, token, timeoutMs, shape))
            .catch(() => undefined);
        }
        throw error;
      });
  }
}
