import { Logger } from '@nestjs/common';
import { CommandTimeoutError } from '../../errors/command-timeout.error';
import { ReplicasNotAcknowledgedError } from '../../errors/replicas-not-acknowledged.error';
import { StoreClosedError } from '../../errors/store-closed.error';
import type { MinReplicas, RedisConnection, RedlockNode } from '../../lock-options.interface';
import { type LockClient, type LockScript, type RedisArgument, createLockClient } from '../clients';
import type { LockKeyNames, LockShape } from '../lock-store.interface';
import { isPermit, recordOf } from '../shared/lock-shapes';
import { type Expirable, expireAfter, withTimeout } from '../shared/with-timeout';
import { noop } from '../../util/noop';
import { withdrawalMessage } from '../shared/withdrawal-message';
import { safeMessage } from '../../errors/safe-cause';
import {
  ACQUIRE,
  EXTEND,
  FORCE_RELEASE,
  HANDOVER,
  INSPECT,
  PERMIT_ACQUIRE,
  PERMIT_EXTEND,
  PERMIT_RAISE_FENCE,
  PERMIT_RELEASE,
  PERMIT_UNDO,
  RAISE_FENCES,
  RELEASE,
  SERVER_ID,
  UNDO,
  WITHDRAW,
  WRITE_ACQUIRE,
} from './scripts';
import { foreignData, scriptError } from './node-errors';
import {
  type AcquireScriptReply,
  type NodeAcquireReply,
  type NodeHandoverReply,
  type NodeLockState,
  forceReleaseReply,
  handoverReply,
  inspectReply,
  isGrant,
  mutexReply,
  permitReply,
  permitsHoldKey,
  refusedByPermits,
  writerReply,
} from './node-replies';
import { ReleaseSubscriber } from './subscriber';

/**
 * How a Redlock node numbers the fences it hands permits and readers: in blocks of `step` (the number of nodes),
 * each value ≡ `residue` (the node's place in the list) modulo `step`, so that no two nodes ever hand out the
 * same value (see PERMIT_ACQUIRE_SCRIPT).
 */
export interface PermitFenceStride {
  readonly step: number;
  readonly residue: number;
}

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
  private readonly subscriber: ReleaseSubscriber;
  /** Set by close(): nothing is sent or opened afterwards but a chain's commands (a lent client stays usable to its owner). */
  private closed = false;
  /** True while a chained command is being sent (see chained): it goes out even once closed. */
  private sendingChained = false;
  /** Whether the last command on the lock connection failed (see `failing`). */
  private lastFailed = false;
  /** A quorum member's attempts whose first script has not answered yet, by token (see inOrder and mustTakeBack). */
  private readonly unanswered = new Map<string, PlainAttempt>();
  /** Per token, the end of a quorum member's writer second script and the token's commands queued behind it. */
  private readonly chains = new Map<string, Promise<void>>();

  /**
   * `quorumMember`: a Redlock node. Its store decides an attempt once a quorum answered and sends the undo,
   * release or withdrawal to the other nodes at once, counting on each connection to run them after the
   * attempt; a writer that meets readers takes a second script (see acquired), which needs inOrder for that.
   */
  constructor(
    connection: RedisConnection | RedlockNode,
    readonly label: string,
    private readonly minReplicas?: MinReplicas,
    private readonly quorumMember = false,
    /** A Redlock node's stride for permit fences (see PERMIT_ACQUIRE_SCRIPT): none on one Redis. */
    private readonly permitFenceStride?: PermitFenceStride,
  ) {
    this.client = createLockClient(connection, label, this.logger, !quorumMember);
    this.subscriber = new ReleaseSubscriber(this.client);
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

  /**
   * What a failure on this node says, with the connection's last error when the failure itself does not
   * (ioredis' "Reached the max retries per request limit", a timeout): `connect ECONNREFUSED …` is the cause
   * a user can act on.
   */
  describeFailure(error: unknown): string {
    const message = safeMessage(error);
    const connectionError = this.client.connectionError;
    return connectionError === undefined || message.includes(connectionError) ? message : `${message}; the connection's last error: ${connectionError}`;
  }

  /**
   * One attempt: a mutex (also a read-write lock's writer) through ACQUIRE_SCRIPT, a permit or reader
   * through PERMIT_ACQUIRE_SCRIPT. A single-key writer that met readers, or was queued behind them before,
   * goes through WRITE_ACQUIRE_SCRIPT (one more round trip the first time, only then).
   */
  acquire(
    keys: readonly LockKeyNames[],
    token: string,
    ttl: number,
    timeoutMs: number,
    shape?: LockShape,
    queued = false,
    final = false,
  ): Promise<NodeAcquireReply> {
    // Not async (the hot path of every lock): like run(), it throws StoreClosedError synchronously once closed.
    if (isPermit(shape)) return this.acquirePermit(keys[0], token, ttl, timeoutMs, shape, final);
    // A quorum member's attempt waits behind the token's writer second script and what queued behind it (an
    // undo sent now would otherwise delete this attempt's grant: see inOrder).
    if (this.quorumMember && this.chains.has(token)) {
      // New work, refused once closed, although the chain's own commands are not.
      this.refuseWhenClosed();
      return this.chainedAttempt(keys, token, ttl, timeoutMs, queued, final);
    }
    return this.acquireNow(keys, token, ttl, timeoutMs, queued, false, final);
  }

  /**
   * The token's next attempt behind its chain (see acquire). Its wait there is bounded from the call by its own
   * timeout (with minReplicas, plus a WAIT's): on a node that froze between a writer's two scripts it would
   * otherwise answer only after the second script's, the chained undo's and its own timeouts (review M4: 624 ms
   * at a 200 ms timeout). Expired while waiting, it is never sent, so nothing of it needs undoing and the chain
   * keeps its order for what follows; once sent, it runs as any attempt, and its real answer is the caller's
   * (a timeout reported for an attempt that then recorded an intent would leave that intent to nobody).
   */
  private chainedAttempt(keys: readonly LockKeyNames[], token: string, ttl: number, timeoutMs: number, queued: boolean, final: boolean): Promise<NodeAcquireReply> {
    return new Promise<NodeAcquireReply>((resolve, reject) => {
      let waiting = true;
      const wait: Expirable = {
        timeoutMs: timeoutMs + (this.minReplicas?.timeout ?? 0),
        deadlineSlot: undefined,
        reject: (error) => {
          waiting = false;
          reject(error);
        },
      };
      const deadline = expireAfter(wait);
      void this.chained(token, () => {
        if (!waiting) return Promise.reject(new CommandTimeoutError(wait.timeoutMs));
        waiting = false;
        deadline.cancel(wait);
        let sent: Promise<NodeAcquireReply>;
        try {
          sent = this.closed ? Promise.reject(new StoreClosedError()) : this.acquireNow(keys, token, ttl, timeoutMs, queued, true, final);
        } catch (error) {
          // Settled whatever happens: a quorum round waits for this answer.
          sent = Promise.reject(error);
        }
        sent.then(resolve, reject);
        return sent;
      });
    });
  }

  private acquireNow(
    keys: readonly LockKeyNames[],
    token: string,
    ttl: number,
    timeoutMs: number,
    queued: boolean,
    inChain: boolean,
    final: boolean,
  ): Promise<NodeAcquireReply> {
    // The first script of a quorum member's attempt is tracked while unanswered (see inOrder and granting).
    const attempt: PlainAttempt | undefined = this.quorumMember ? { superseded: false, takenBack: false, inChain } : undefined;
    if (queued && keys.length === 1) {
      const written = this.acquireWrite(keys[0], token, ttl, timeoutMs, final, attempt);
      return attempt ? this.unansweredUntil(token, attempt, written, (reply) => reply) : written;
    }
    const names: string[] = [];
    for (const key of keys) names.push(key.lockKey);
    for (const key of keys) names.push(key.fenceKey);
    for (const key of keys) names.push(key.awaitedKey);
    // A last attempt leaves no awaited mark (see ACQUIRE_SCRIPT); the others send two arguments, as before.
    const args: RedisArgument[] = final ? [token, ttl, 0] : [token, ttl];
    if (!attempt) {
      return this.granting(ACQUIRE, names, args, keys, token, timeoutMs).then((reply) => this.acquired(reply as AcquireScriptReply, keys, token, ttl, timeoutMs, final));
    }
    const sent = this.granting(ACQUIRE, names, args, keys, token, timeoutMs, undefined, attempt);
    return this.unansweredUntil(token, attempt, sent, (reply) => this.acquired(reply as AcquireScriptReply, keys, token, ttl, timeoutMs, final, attempt));
  }

  /**
   * Keeps a quorum member's first script among the token's unanswered attempts until `sent` settles (see
   * inOrder), and hands its reply to `answer` in the same callback: a second script is chained before any
   * other command of the token can look for the attempt.
   */
  private unansweredUntil<R, T>(token: string, attempt: PlainAttempt, sent: Promise<R>, answer: (reply: R) => T | Promise<T>): Promise<T> {
    this.unanswered.set(token, attempt);
    const answered = (): void => {
      if (this.unanswered.get(token) === attempt) this.unanswered.delete(token);
    };
    return sent.then(
      (reply) => {
        answered();
        return answer(reply);
      },
      (error: unknown) => {
        answered();
        throw error;
      },
    );
  }

  /**
   * Runs a quorum member's undo, release or withdrawal for `token` in the token's order on this node. The
   * store sends these to nodes that have not answered yet, and the connection runs them after the attempt's
   * first script; but a writer that met readers takes a second one (see acquired), which would run after them:
   * granted after its own undo or release (the readers gone meanwhile), or its intent recorded after its
   * withdrawal, left on the node for a whole ttl and announced to nobody (readers refused by such leftovers on
   * N - quorum + 1 nodes slept until they expired). So: while the first script is unanswered the command goes
   * out at once and the second script is not sent (the attempt is superseded); while the second is in flight
   * the command waits for it, and so does the token's next attempt (see acquire).
   */
  private inOrder<T>(token: string, command: () => Promise<T>, takesBack: boolean): Promise<T> {
    if (!this.quorumMember) return command();
    if (this.chains.has(token)) return this.chained(token, command);
    const attempt = this.unanswered.get(token);
    if (attempt) {
      attempt.superseded = true;
      if (takesBack) attempt.takenBack = true;
    }
    return command();
  }

  /**
   * Runs `command` after the token's chain (if any) and makes it the chain's new end until it settles. It is
   * sent even once close() has begun: the chain's commands finish what was begun before (see close).
   */
  private chained<T>(token: string, command: () => Promise<T>): Promise<T> {
    const ahead = this.chains.get(token);
    const send = (): Promise<T> => this.sendAsChained(command);
    const result = ahead ? ahead.then(send) : send();
    const end = result.then(noop, noop);
    this.chains.set(token, end);
    void end.then(() => {
      if (this.chains.get(token) === end) this.chains.delete(token);
    });
    return result;
  }

  /**
   * Sends a command of a token's chain: past refuseWhenClosed even once closed. Every such command sends
   * synchronously (run and write check refuseWhenClosed before their first await); one that must wait for
   * something first sends through here again once it has (see withdrawIfRecorded).
   */
  private sendAsChained<T>(command: () => Promise<T>): Promise<T> {
    this.sendingChained = true;
    try {
      return command();
    } finally {
      this.sendingChained = false;
    }
  }

  /** ACQUIRE_SCRIPT's answer: granted, busy, or (permits at the key) the writer's path. */
  private acquired(
    reply: AcquireScriptReply,
    keys: readonly LockKeyNames[],
    token: string,
    ttl: number,
    timeoutMs: number,
    final: boolean,
    attempt?: PlainAttempt,
  ): NodeAcquireReply | Promise<NodeAcquireReply> {
    if (!permitsHoldKey(reply)) return mutexReply(reply, keys);
    // Permits hold the key: readers (this is their writer) or a semaphore (a mix, refused). A writer for
    // several keys only waits: queueing it on one key would keep readers of that key out for nothing; nor
    // does a quorum member's attempt already undone or released here (see inOrder).
    if (keys.length === 1 && !attempt?.superseded) {
      // The first script wrote nothing: once close() has begun, the attempt ends here.
      if (this.closed) throw new StoreClosedError();
      const write = (): Promise<NodeAcquireReply> => this.acquireWrite(keys[0], token, ttl, timeoutMs, final);
      // The token's commands from now on wait for this script; an attempt that itself waited in the token's
      // chain (see acquire) already ends it, its second script included.
      return attempt && !attempt.inChain ? this.chained(token, write) : write();
    }
    return refusedByPermits(reply);
  }

  /**
   * A writer on a key that readers may hold (see WRITE_ACQUIRE_SCRIPT). `attempt` when it is a quorum
   * member's first script (a writer queued before); the second script runs in the token's chain instead.
   */
  private async acquireWrite(key: LockKeyNames, token: string, ttl: number, timeoutMs: number, final: boolean, attempt?: PlainAttempt): Promise<NodeAcquireReply> {
    const names = [key.lockKey, key.fenceKey, key.permitsKey, key.writerKey, key.awaitedKey];
    // final: the caller attempts no more, so no intent is recorded (see AcquireRequest.final).
    const reply = (await this.granting(WRITE_ACQUIRE, names, [token, ttl, final ? 0 : 1, this.quorumMember ? 1 : 0], [key], token, timeoutMs, undefined, attempt)) as unknown[];
    return writerReply(reply, key);
  }

  /** A semaphore's permit or a reader (see PERMIT_ACQUIRE_SCRIPT). */
  private async acquirePermit(
    key: LockKeyNames,
    token: string,
    ttl: number,
    timeoutMs: number,
    shape: Exclude<LockShape, { kind: 'mutex' }>,
    final: boolean,
  ): Promise<NodeAcquireReply> {
    const names = [key.lockKey, key.fenceKey, key.permitsKey, key.writerKey, key.awaitedKey];
    const limit = shape.kind === 'semaphore' ? shape.limit : 0;
    // A quorum member's permit attempt is tracked only for its take-back (see mustTakeBack), which minReplicas
    // alone asks for: a permit has no second script.
    const attempt: PlainAttempt | undefined = this.quorumMember && this.minReplicas ? { superseded: false, takenBack: false, inChain: false } : undefined;
    const stride = this.permitFenceStride;
    const mayWait = final ? 0 : 1;
    const args = stride ? [token, ttl, recordOf(shape), limit, mayWait, stride.step, stride.residue] : [token, ttl, recordOf(shape), limit, mayWait];
    const sent = this.granting(PERMIT_ACQUIRE, names, args, [key], token, timeoutMs, shape, attempt);
    const reply = (await (attempt ? this.unansweredUntil(token, attempt, sent, (answer) => answer) : sent)) as unknown[];
    return permitReply(reply, key, shape);
  }

  /**
   * Runs a granting script; a grant too few replicas acknowledged is taken back before rejecting, unless
   * `attempt` (a quorum member's first script) was already taken back by an undo or release sent while it
   * was unanswered: that one ran right after it on the connection, and the token's next attempt may have run
   * since, whose grant a take-back sent now would delete (see mustTakeBack).
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
    if (!this.minReplicas) return this.run(script, names, args, timeoutMs, keys);
    return this.write(script, names, args, timeoutMs, keys, isGrant, 'grant').catch(
      async (error: unknown) => {
        // Granted, but on too few replicas to survive a failover: take it back before saying so.
        // undoNow: this may be the writer's second script, which undo() would wait for (see inOrder).
        if (error instanceof ReplicasNotAcknowledgedError && this.mustTakeBack(attempt, token, error.resent)) {
          // Sent even once close() has begun: it finishes an attempt made before.
          await this.sendAsChained(() => this.undoNow(keys, token, timeoutMs, shape)).catch(() => undefined);
        }
        throw error;
      },
    );
  }

  /**
   * Whether a grant of `attempt` too few replicas acknowledged is still for this node to take back (always,
   * outside a quorum member's first script). Not when an undo or release of the attempt followed it on the
   * connection (unless the script itself was sent again after NOSCRIPT, and so ran behind that undo), nor once
   * the token's next attempt has gone out: a take-back sent now would run after that attempt and delete its
   * grant, while whatever holds the token's keys is then that attempt's, kept or undone with its outcome.
   */
  private mustTakeBack(attempt: PlainAttempt | undefined, token: string, resent: boolean): boolean {
    if (!attempt) return true;
    if (this.unanswered.get(token) !== attempt) return false;
    return !attempt.takenBack || resent;
  }

  async extend(keys: readonly LockKeyNames[], token: string, ttl: number, timeoutMs: number, shape?: LockShape): Promise<boolean> {
    const permit = isPermit(shape);
    const names = permit ? [keys[0].lockKey, keys[0].permitsKey] : keys.map((key) => key.lockKey);
    // A renewal too few replicas saw does not count: the lease keeps the validity it had (and retries).
    const reply = await this.write(permit ? PERMIT_EXTEND : EXTEND, names, [token, ttl], timeoutMs, keys, (answer) => Number(answer) === 1, 'renewal');
    return Number(reply) === 1;
  }

  /**
   * Removes a writer's intent (see WITHDRAW_SCRIPT); with `announce`, wakes the readers it kept waiting.
   */
  withdraw(key: LockKeyNames, token: string, announce: boolean, timeoutMs: number, message = withdrawalMessage(token)): Promise<void> {
    return this.inOrder(token, () => this.withdrawNow(key, token, announce, timeoutMs, message), false);
  }

  private async withdrawNow(key: LockKeyNames, token: string, announce: boolean, timeoutMs: number, message: string): Promise<void> {
    await this.run(WITHDRAW, [key.writerKey], [token, announce ? 1 : 0, key.channel, message], timeoutMs, [key]);
  }

  /** Whether a writer's second script of `token` is in flight on this quorum member (see inOrder). */
  secondScriptInFlight(token: string): boolean {
    return this.quorumMember && this.chains.has(token);
  }

  /**
   * Withdraws `token`'s intent, announced with `message`, if `recorded` (this node's late answer to the
   * token's attempt, whose second script is in flight: see secondScriptInFlight) says it was recorded. Made
   * now, in the token's order: behind that second script, and so ahead of the token's next attempt, whose
   * fresh intent it must not remove.
   */
  withdrawIfRecorded(key: LockKeyNames, token: string, timeoutMs: number, recorded: Promise<boolean>, message: string): Promise<void> {
    return this.chained(token, () =>
      recorded.then((wasRecorded) => (wasRecorded ? this.sendAsChained(() => this.withdrawNow(key, token, true, timeoutMs, message)) : undefined)),
    );
  }

  /**
   * Returns how many of the keys still held `token` and were released: deleted, or with `holdFor` > 0
   * left to expire in that many ms (minHold). No WAIT: a release that a failover loses only leaves a lease
   * to expire on its own, which delays the next holder and never admits two.
   * A mutex's release is announced when a refused attempt marked the key awaited, or with `announce` (callers
   * of the releasing process wait for the keys: some may sleep without having attempted, see RELEASE_SCRIPT);
   * a permit's always is.
   */
  release(keys: readonly LockKeyNames[], token: string, timeoutMs: number, holdFor = 0, shape?: LockShape, announce = false): Promise<number> {
    if (this.quorumMember) return this.inOrder(token, () => this.releaseNow(keys, token, timeoutMs, holdFor, shape, announce), true);
    return this.releaseNow(keys, token, timeoutMs, holdFor, shape, announce);
  }

  private releaseNow(keys: readonly LockKeyNames[], token: string, timeoutMs: number, holdFor: number, shape: LockShape | undefined, announce: boolean): Promise<number> {
    // Not async (a hot path): like run(), it throws StoreClosedError synchronously once closed.
    if (isPermit(shape)) {
      const key = keys[0];
      const args = [token, Math.max(0, Math.ceil(holdFor)), key.channel];
      return this.run(PERMIT_RELEASE, [key.lockKey, key.permitsKey], args, timeoutMs, keys).then(Number);
    }
    const names: string[] = [];
    for (const key of keys) names.push(key.lockKey);
    for (const key of keys) names.push(key.awaitedKey);
    const args: RedisArgument[] = [token, Math.max(0, Math.ceil(holdFor)), announce ? 1 : 0];
    for (const key of keys) args.push(key.channel);
    return this.run(RELEASE, names, args, timeoutMs, keys).then(Number);
  }

  /**
   * Releases a single-key mutex held by `token` and grants it to `to` for `ttl` ms in the same step (see
   * HANDOVER_SCRIPT). Never with minReplicas: the store only hands over when no WAIT is asked.
   */
  async handOver(key: LockKeyNames, token: string, to: string, ttl: number, timeoutMs: number): Promise<NodeHandoverReply> {
    const reply = (await this.run(HANDOVER, [key.lockKey, key.fenceKey], [token, to, ttl, key.channel], timeoutMs, [key])) as unknown[];
    return handoverReply(reply);
  }

  /** Takes back an attempt that did not become a lock, silently (see UNDO_SCRIPT). */
  undo(keys: readonly LockKeyNames[], token: string, timeoutMs: number, shape?: LockShape): Promise<void> {
    if (this.quorumMember) return this.inOrder(token, () => this.undoNow(keys, token, timeoutMs, shape), true);
    return this.undoNow(keys, token, timeoutMs, shape);
  }

  private async undoNow(keys: readonly LockKeyNames[], token: string, timeoutMs: number, shape?: LockShape): Promise<void> {
    if (isPermit(shape)) {
      await this.run(PERMIT_UNDO, [keys[0].lockKey, keys[0].permitsKey], [token], timeoutMs, keys);
      return;
    }
    await this.run(UNDO, keys.map((key) => key.lockKey), [token], timeoutMs, keys);
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
    const reply = await this.write(script, names, [token, ...fences], timeoutMs, keys, (answer) => Number(answer) === 1, 'fence');
    if (Array.isArray(reply)) throw foreignData(keys[Number(reply[1]) - 1], 'fence');
    return Number(reply) === 1;
  }

  /**
   * Records `fence` as a permit's or reader's own on this node, for inspect (PERMIT_RAISE_FENCE_SCRIPT, which
   * also raises the counter to it if lower), while the node still holds it. Unlike raiseFences it never waits
   * for replicas: nothing the fence's order rests on is written here (see RedlockLockStore.recordPermitFence).
   */
  async recordPermitFence(key: LockKeyNames, token: string, fence: number, timeoutMs: number): Promise<void> {
    // Past the command's own bookkeeping (run): a record that fails or times out says nothing the next verdict
    // should go by (`failing`), and nobody waits for it.
    this.refuseWhenClosed();
    await this.client.runScript(PERMIT_RAISE_FENCE, [key.lockKey, key.fenceKey, key.permitsKey], [token, fence], timeoutMs);
  }

  /** What holds `key` on this node, or null when nothing does (see INSPECT_SCRIPT). */
  async inspect(key: LockKeyNames, timeoutMs: number): Promise<NodeLockState | null> {
    return inspectReply((await this.run(INSPECT, [key.lockKey, key.fenceKey, key.permitsKey], [], timeoutMs, [key])) as unknown[]);
  }

  /** Deletes every lease at `key` whoever holds it, announcing each release: the values evicted. */
  async forceRelease(key: LockKeyNames, timeoutMs: number): Promise<string[]> {
    return forceReleaseReply(await this.run(FORCE_RELEASE, [key.lockKey, key.permitsKey], [key.channel], timeoutMs, [key]));
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

  /**
   * The run_id of the server this node reaches (see DistinctServers). Not recorded in `failing`: a node that
   * refuses INFO (an ACL) still serves locks.
   */
  async serverId(timeoutMs: number): Promise<string> {
    this.refuseWhenClosed();
    return String(await this.client.runScript(SERVER_ID, [], [], timeoutMs));
  }

  /** Where release announcements go; set once by the store. */
  onRelease(handler: (channel: string, token: string) => void): void {
    this.subscriber.onRelease(handler);
  }

  async subscribe(channel: string, timeoutMs: number): Promise<void> {
    this.refuseWhenClosed();
    await withTimeout(this.subscriber.open().subscribe(channel), timeoutMs);
  }

  unsubscribe(channel: string): Promise<void> {
    return this.subscriber.unsubscribe(channel);
  }

  /**
   * Closes the connections this node opened (its lock connection and subscriber); a lent client stays open.
   * New work is refused at once. A quorum member's chains run out first (see chained): an undo, release or
   * withdrawal chained behind a writer's second script in flight, made before or during close(), goes out
   * once that answers; refused, it would leave the second script's lease or intent on this node for a ttl.
   * Each chained command has its own timeout; CLOSE_DRAIN_MS (plus two WAITs with minReplicas) bounds a chain
   * of several behind a node that stopped answering, and a node whose last command failed is not waited for.
   */
  async close(): Promise<void> {
    this.closed = true;
    // A chained command with minReplicas can take its WAIT's timeout on top of its own.
    const deadline = performance.now() + CLOSE_DRAIN_MS + 2 * (this.minReplicas?.timeout ?? 0);
    while (this.chains.size > 0 && !this.lastFailed && performance.now() < deadline) {
      await settledOrTimedOut(Promise.all(this.chains.values()), deadline - performance.now());
    }
    await Promise.all([this.subscriber.close(), this.client.close()]);
  }

  /**
   * After close() nothing may be sent or opened: a caller still in a wait loop at shutdown would otherwise
   * open a new subscriber connection that nobody closes (and that reconnects forever once Redis is gone),
   * or keep attempting on a connection being closed.
   */
  private refuseWhenClosed(): void {
    if (this.closed && !this.sendingChained) throw new StoreClosedError();
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
    return this.client.runScript(script, names, args, timeoutMs).then(
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
    const { reply, acks, resent } = await withTimeout(
      this.client.runScriptAndWait(script, names, args, minReplicas.replicas, minReplicas.timeout),
      timeoutMs + minReplicas.timeout,
    ).then(
      (answer) => this.succeeded(answer),
      (error: unknown) => this.failed(error, keys),
    );
    if (wrote(reply) && acks < minReplicas.replicas) throw new ReplicasNotAcknowledgedError(what, acks, minReplicas, resent);
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
    return scriptError(error, keys);
  }
}

/** A quorum member's attempt until its first script answers (see RedisLockNode.inOrder and mustTakeBack). */
interface PlainAttempt {
  /** An undo, release or withdrawal of its token went out meanwhile: no second script is to follow. */
  superseded: boolean;
  /** That command was an undo or release: it deletes this attempt's grant, so no take-back is to follow either. */
  takenBack: boolean;
  /** Sent from the token's chain (see acquire): the chain's end already covers its second script. */
  readonly inChain: boolean;
}

/** How long close() waits at most for a quorum member's chains to run out. */
const CLOSE_DRAIN_MS = 2_000;

/** Resolves when `promise` settles or after `ms`, whichever comes first, leaving no timer behind. */
async function settledOrTimedOut(promise: Promise<unknown>, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const elapsed = new Promise<void>((resolve) => (timer = setTimeout(resolve, Math.max(0, ms))));
  try {
    await Promise.race([promise.then(noop, noop), elapsed]);
  } finally {
    clearTimeout(timer);
  }
}
