import { InvalidLockKeyError, LockOptionsError, LockUnavailableError } from '../../errors';
import type { MinReplicas, RedlockNode } from '../../lock-options.interface';
import { type NodeHealth, roundMs, type StoreHealth } from '../../health/store-health';
import type { AcquireOutcome, AcquireRequest, LockKeyNames, LockShape, LockState, LockStore, ReleaseWatch } from '../lock-store.interface';
import { type NodeAcquireReply, type NodeHolder, UNNAMED_READERS } from '../redis/node-replies';
import { RedisLockNode } from '../redis/redis-lock-node';
import { TokenOrder } from './token-order';
import { isPermit, kindOf } from '../shared/lock-shapes';
import { ReleaseHub } from '../shared/release-hub';
import { withdrawalMessage } from '../shared/withdrawal-message';
import { clockDrift, commandTimeoutFor } from '../shared/timing';
import { DistinctServers } from './distinct-servers';
import { fencesAgreed, type NodeGrant, writeBackFences } from './fence-write-back';
import { type NodeAnswer, QuorumRound, quorumOf, semaphoreQuorumOf } from './quorum-round';

export interface RedlockLockStoreOptions {
  readonly driftFactor: number;
  /** Fixed per-node command timeout; by default derived from each call's ttl (see commandTimeoutFor). */
  readonly commandTimeout?: number;
  /**
   * Per node: its grant (and renewal) counts toward the quorum only once this many of its replicas
   * acknowledged it; a node whose replicas did not counts as failed (see RedisLockNode).
   */
  readonly minReplicas?: MinReplicas;
}

/** Mean delay before retrying a key whose nodes were split between contending attempts. */
const CONTENDED_RETRY_MS = 20;

/** How long a writer refused by readers without a quorum waits for the other nodes' answers (see attempt). */
const READERS_HEAR_OUT_MS = 50;

/** Prefix of a reader's value among a refusal's holders (see attempt): never a lease value's first character. */
const READER = '\0reader:';

/** Mean delay before retrying a semaphore whose nodes were split between attempts (or hold stale permits). */
const PERMIT_CONTENDED_RETRY_MS = 100;

/** How a round of votes ended. */
type Verdict = 'for' | 'against' | 'unavailable';

/**
 * The Redlock algorithm over N independent Redis masters (redis.io, "Distributed locks"): a lock is held
 * when a quorum of floor(N/2)+1 nodes holds it, for a validity of ttl − elapsed − drift measured on the
 * monotonic clock from before the first command was sent.
 *
 * Every operation sends the single-node script to all nodes at once and is decided as soon as a quorum
 * answered for it, or so many answered against (busy, or failed) that a quorum is impossible; paused or
 * slow nodes are then no longer waited for. Each node command is bounded by a per-node timeout small against
 * the ttl (a fifth of it, 100 ms to 1 s), so an attempt that must wait for silent nodes still ends within
 * that timeout plus one round trip.
 *
 * Unlike node-redlock: the validity of a grant is measured from the start of that attempt (not of the
 * first retry) and a grant whose validity is over is never returned; a failed attempt is undone on every
 * node before it returns (the next attempt, and other clients, find no partial lock; a grant that held a
 * quorum is released and announced instead, see undo); an unreachable
 * majority is a LockUnavailableError, a busy key is a normal "not acquired"; and fences stay strictly
 * increasing when the quorum moves between nodes (fence-write-back.ts).
 */
export class RedlockLockStore implements LockStore {
  readonly kind = 'redlock';
  private readonly nodes: RedisLockNode[];
  private readonly quorum: number;
  private readonly hub: ReleaseHub;
  /**
   * Per lock key, this process's acquire attempt in flight on it, while nodes are down. An attempt then
   * waits for the down nodes' answers (up to a node timeout) and keeps its partial grant meanwhile: other
   * attempts of the process would split the live nodes against it and be undone in turn, round after
   * round, so they go one at a time. Not while every node answers: an attempt is then decided in a round
   * trip, and a hand-over's attempt must go out right behind the release, never wait for another's.
   */
  private readonly inFlight = new Map<string, Promise<void>>();
  /** Numbers the withdrawals of intents outcomes did not report (see withdrawUnreported). */
  private lateWithdrawals = 0;
  /** Finds two nodes that reach one server, which the options check at bootstrap cannot see. */
  private readonly servers: DistinctServers;

  constructor(
    connections: readonly RedlockNode[],
    private readonly options: RedlockLockStoreOptions,
  ) {
    if (connections.length === 0) throw new RangeError('Redlock needs at least one node');
    // Permit fences by stride (see PERMIT_ACQUIRE_SCRIPT): every node hands out values no other node does.
    const step = connections.length;
    this.nodes = connections.map(
      (connection, index) =>
        new RedisLockNode(connection, {
          label: `nodes[${index}]`,
          minReplicas: options.minReplicas,
          order: new TokenOrder(),
          permitFenceStride: step > 1 ? { step, residue: index } : undefined,
        }),
    );
    this.quorum = quorumOf(this.nodes.length);
    this.servers = new DistinctServers(this.nodes, connections);
    this.hub = new ReleaseHub({
      subscribe: (channel) => this.subscribe(channel),
      unsubscribe: async (channel) => {
        await Promise.allSettled(this.nodes.map((node) => node.unsubscribe(channel)));
      },
    });
    // Every node that held a released lock announces it (where an attempt was refused there, or this process
    // watches the key: see RELEASE_SCRIPT), with the releasing token: the hub counts it once.
    for (const node of this.nodes) node.onRelease((channel, token) => this.hub.announce(channel, token));
  }

  async acquire(request: AcquireRequest): Promise<AcquireOutcome> {
    if (!this.servers.verified) {
      const failure = this.servers.failure();
      if (failure) throw failure;
      this.servers.check(this.timeout(undefined));
    }
    if (!this.nodes.some((node) => node.failing)) return this.attempt(request);
    // Nodes are down: this process's attempts on a key go one at a time (see inFlight). Checked again after
    // each wait, and marked at once after the last check, so that attempts resumed together by the end of
    // the same one still go one by one.
    for (let ahead = this.attemptsAhead(request.keys); ahead; ahead = this.attemptsAhead(request.keys)) await ahead;
    const done = this.startAttempt(request.keys);
    try {
      return await this.attempt(request);
    } finally {
      done();
    }
  }

  /** This process's attempts in flight on any of `keys` (made while nodes were down), or undefined. */
  private attemptsAhead(keys: readonly LockKeyNames[]): Promise<unknown> | undefined {
    let ahead: Promise<void>[] | undefined;
    for (const key of keys) {
      const attempt = this.inFlight.get(key.lockKey);
      if (attempt) (ahead ??= []).push(attempt);
    }
    return ahead && Promise.all(ahead);
  }

  /** Marks an attempt on `keys` as in flight; the function returned ends it. */
  private startAttempt(keys: readonly LockKeyNames[]): () => void {
    let end!: () => void;
    const attempt = new Promise<void>((resolve) => (end = resolve));
    for (const key of keys) this.inFlight.set(key.lockKey, attempt);
    return () => {
      for (const key of keys) if (this.inFlight.get(key.lockKey) === attempt) this.inFlight.delete(key.lockKey);
      end();
    };
  }

  /** One attempt on every node (see acquire). */
  private async attempt(request: AcquireRequest): Promise<AcquireOutcome> {
    const ttl = Math.max(1, Math.round(request.ttl));
    const timeout = this.timeout(ttl);
    const { keys, token, shape } = request;
    const quorum = this.quorumFor(shape);
    const startedAt = performance.now();
    const round = new QuorumRound(this.nodes.length, (node) => this.nodes[node].acquire(request, timeout));
    const verdict = await round.decide((answers) => this.acquireVerdict(answers, quorum));
    const answers = round.answersSoFar();
    // A writer queued on any node withdraws its intent from every node when done waiting.
    const queued = answers.some(recordedIntent);
    // Only a single-key mutex or writer records intents (see RedisLockNode.acquire), never on a final attempt;
    // one the service already keeps queued (request.queued) it withdraws from every node itself when done.
    if (keys.length === 1 && !request.queued && !request.final && !isPermit(shape) && (verdict === 'for' || !queued)) {
      this.withdrawUnreported(round, answers, keys[0], token, timeout, verdict === 'for');
    }

    if (verdict === 'for') {
      const grants: NodeGrant[] = [];
      let vacant = false;
      for (const answer of answers) {
        if (answer.ok && answer.value.acquired) {
          grants.push({ node: answer.node, fences: answer.value.fences, reaches: answer.value.reaches });
          vacant ||= answer.value.vacant === true;
        }
      }
      // As a rule a quorum of the granting nodes already gave (or, for permits, reached) the highest fences:
      // nothing to write back, and no round to wait for.
      let fences: number[] | undefined;
      // Taken back after all, the grant is announced as a release: it held a quorum, so waiters refused for it
      // sleep until a release of it (or its lease's end) and this caller, throwing, will never release it.
      try {
        fences = fencesAgreed(grants, quorum) ?? (await writeBackFences(this.nodes, grants, keys, token, quorum, timeout, shape));
      } catch (error) {
        await this.undo(round, keys, token, timeout, shape, true);
        throw error;
      }
      const validUntil = startedAt + ttl - clockDrift(ttl, this.options.driftFactor);
      if (fences && validUntil > performance.now()) {
        if (isPermit(shape)) this.recordPermitFence(grants, keys, token, fences, quorum, timeout);
        return { acquired: true, fences, validUntil, vacant };
      }
      await this.undo(round, keys, token, timeout, shape, true);
      throw this.unavailable(
        keys,
        'acquire',
        fences
          ? `a quorum granted the lock only after its validity (ttl ${ttl} ms − elapsed − drift) had run out; ` +
              'the nodes answer too slowly for this ttl (or the event loop was blocked)'
          : `fewer than ${quorum} of ${this.nodes.length} nodes confirmed the lock's fencing token`,
        answers,
      );
    }

    await this.undo(round, keys, token, timeout, shape);
    if (verdict === 'unavailable') {
      throw this.unavailable(keys, 'acquire', this.tooFewNodes(answers, quorum), answers);
    }
    let heard = answers;
    if (namesReaders(heard) && !this.readersHoldQuorum(heard) && heard.length < this.nodes.length) {
      // A writer refused by readers none of whom holds a quorum of the nodes heard: partial reader grants being
      // undone (silently), or readers granted by quorums that include the nodes not heard yet. Hear those out
      // (briefly: a node presumed down, or one slower than READERS_HEAR_OUT_MS, is not waited for).
      heard = await this.hearOut(round, READERS_HEAR_OUT_MS);
    }
    const busy: number[] = [];
    const holders = new Map<string, number>();
    let failed = 0;
    let granted = 0;
    // Foreign data at a key, or a key held as another kind of lock, on a majority of the nodes is the caller's
    // to fix (key, keyPrefix, or the same limit/mode everywhere). On a minority it is a leftover: a lease of
    // the other kind being released or expiring there (a release is decided on a quorum, and the last nodes
    // apply it a moment later), so that node counts as busy for now and the attempt is made again soon.
    const mistakes = heard.filter((answer) => !answer.ok && isCallersMistake(answer.error));
    if (mistakes.length >= this.quorum) throw (mistakes[0] as { error: unknown }).error;
    // Readers are counted one by one only when every node they refused on named them (one too full to name
    // them could hold any of them): otherwise "readers", unnamed, count as one holder, as before.
    const byReader = namesReaders(heard);
    let refusedByReaders = false;
    /** Refusals by a holder other than readers (a writer, or unknown): the message then names no readers. */
    let refusedOtherwise = false;
    for (const answer of heard) {
      if (!answer.ok && isCallersMistake(answer.error)) {
        busy.push(-1);
        continue;
      }
      if (!answer.ok) failed++;
      else if (!answer.value.acquired) {
        busy.push(answer.value.retryAfter);
        // Refused by readers it names: each reader counts as a holder of this node (a partial reader grant holds
        // no quorum, and its undo is announced to nobody).
        const readers = byReader ? answer.value.readers : undefined;
        if (answer.value.readers === undefined) refusedOtherwise = true;
        if (readers) {
          refusedByReaders = true;
          for (const reader of readers) holders.set(READER + reader, (holders.get(READER + reader) ?? 0) + 1);
        } else holders.set(answer.value.holder, (holders.get(answer.value.holder) ?? 0) + 1);
      } else granted++;
    }
    if (shape?.kind === 'semaphore') {
      // Permits name no holder. Nodes split between this attempt and others (each undone, silently) or a
      // node full of permits the others lack (a holder that lost its quorum, until they expire): look
      // again soon, at a random moment. Otherwise every busy node is full: a release wakes this waiter,
      // or the earliest permit's expiry on the nodes that must free one.
      const leasesEnd = this.retryAfter(busy, failed, quorum);
      if (granted === 0) return { acquired: false, retryAfter: leasesEnd, queued };
      const contended = Math.ceil(PERMIT_CONTENDED_RETRY_MS * (0.5 + Math.random()));
      return { acquired: false, retryAfter: leasesEnd >= 0 ? Math.min(leasesEnd, contended) : contended, queued };
    }
    const most = Math.max(0, ...holders.values());
    if (most < this.quorum) {
      // No grant holds a quorum of the nodes that answered. Nodes that failed, and those not heard from yet
      // whose last command failed too (presumed down, not merely slower: a busy verdict does not wait for
      // them), may hold anything.
      // Counted by reader, every node not heard from may hold them (the answers were heard out, and a node
      // slower than that may hold what makes a quorum of readers): it then sleeps at most about a node timeout.
      let unknown = failed;
      this.nodes.forEach((node, index) => {
        if ((node.failing || refusedByReaders) && !heard.some((answer) => answer.node === index)) unknown++;
      });
      if (most + unknown < this.quorum) {
        // Nor could one with them: the key is contended by attempts that split the nodes between them and
        // are being undone (or by leases about to expire). Nobody will announce a release: try again soon,
        // at a random moment so that the contenders do not split the nodes again.
        return { acquired: false, retryAfter: Math.ceil(CONTENDED_RETRY_MS * (0.5 + Math.random())), queued };
      }
      // A holder may hold a quorum with the nodes that are down (or had one: a holder left on fewer than a
      // quorum of the live nodes cannot renew, and its leases run out at their PTTL), or it is another
      // attempt, whose partial grant lasts until the down nodes' answers are in (one node timeout as a rule;
      // about two for an attempt that first waited there behind a writer's second script).
      // Retrying every few ms would spin for as long as such leases last, and so many attempts would keep
      // splitting the live nodes between them: look again after about one node timeout, or when the leases
      // end if sooner (a release still wakes the waiters at once).
      const leasesEnd = this.retryAfter(busy, failed, quorum);
      const partialGrantsEnd = Math.ceil(timeout * (0.5 + Math.random()));
      return { acquired: false, retryAfter: leasesEnd >= 0 ? Math.min(leasesEnd, partialGrantsEnd) : partialGrantsEnd, queued };
    }
    // A quorum holds the key: only a release of a grant that refused this attempt can free it for the waiter
    // (see AcquireOutcome.refusedBy), when every refusal named its grant.
    const refusedBy = mistakes.length === 0 && !holders.has('') && !refusedByReaders ? [...holders.keys()] : undefined;
    const retryAfter = this.retryAfter(busy, failed, quorum);
    return !refusedOtherwise && mistakes.length === 0 && busy.length > 0
      ? { acquired: false, retryAfter, queued, refusedBy, byReaders: true }
      : { acquired: false, retryAfter, queued, refusedBy };
  }

  /**
   * Withdraws the writer's intents this attempt recorded that its outcome will not report (the caller
   * withdraws only those a busy outcome reports as `queued`): recorded on a node that answered after the
   * verdict (a node with readers answers a writer a script later, see NodeAcquire.acquired), or beside a
   * grant (`granted`: a grant never says queued). Left alone, such an intent lasts a writer ttl (renewed by
   * the writer's next attempts) and its end is announced to nobody: readers refused by intents on N - quorum
   * + 1 nodes slept until then, and a release that woke one of them was spent on a refused reader. A late
   * one is withdrawn with an announcement, so the readers it refused look again, by a withdrawal made now in
   * the token's order on that node and sent once the answer shows the intent (see withdrawIfRecorded); one
   * beside a grant silently, before the grant's release, which wakes them.
   */
  private withdrawUnreported(
    round: QuorumRound<NodeAcquireReply>,
    answers: readonly NodeAnswer<NodeAcquireReply>[],
    key: LockKeyNames,
    token: string,
    timeout: number,
    granted: boolean,
  ): void {
    if (granted) {
      for (const answer of answers) {
        if (recordedIntent(answer)) this.nodes[answer.node].withdraw(key, token, timeout, { announce: false }).catch(() => undefined);
      }
    }
    if (answers.length === this.nodes.length) return;
    // Its own occasion: this writer may withdraw again (a later attempt's late node, or when it gives up), and
    // a repeat of the same message would wake nobody (see withdrawalMessage).
    let message: string | undefined;
    const occasion = (): string => (message ??= withdrawalMessage(token, `late${++this.lateWithdrawals}`));
    round.answers.forEach((late, index) => {
      if (answers.some((answer) => answer.node === index)) return;
      const node = this.nodes[index];
      if (node.secondScriptInFlight(token)) {
        // Its answer may record the intent; the token's next attempt will queue behind this withdrawal.
        node.withdrawIfRecorded(key, token, timeout, late.then(recordedIntent), occasion()).catch(() => undefined);
      } else if (granted) {
        // Still at its first script: it may yet take a second one. No next attempt of this token follows a
        // grant, so the withdrawal can wait for the answer.
        void late
          .then((answer) => (recordedIntent(answer) ? node.withdraw(key, token, timeout, { announce: true, message: occasion() }) : undefined))
          .catch(() => undefined);
      }
      // Otherwise the busy or failed attempt's undo, sent right after this, supersedes the second script.
    });
  }

  /**
   * Records a permit's or reader's fence (the grant's, F) on a quorum of the nodes that granted it, for inspect,
   * which reports the value a quorum records. Each node recorded the value its own counter gave, by stride (see
   * PERMIT_ACQUIRE_SCRIPT): F on one of them, another value on each of the others. So F is recorded on as many
   * others as a quorum needs (the write-back, when one ran, recorded it on the nodes it raised already; sending
   * them another is harmless, and rare). Nothing waits for it: the grant's fence is established without it (the
   * counters reached F). A node that no longer holds the permit (released meanwhile: the release went first on
   * the same connection) changes nothing. Nodes beyond the quorum keep their own values: one such extra script per
   * node and grant would cost Redis about as much as the grant's own (a review counted +40% per grant and release
   * on 5 nodes when every node was recorded).
   */
  private recordPermitFence(
    grants: readonly NodeGrant[],
    keys: readonly LockKeyNames[],
    token: string,
    fences: readonly number[],
    quorum: number,
    timeout: number,
  ): void {
    let recorded = grants.filter((grant) => grant.fences[0] === fences[0]).length;
    for (const grant of grants) {
      if (recorded >= quorum) return;
      if (grant.fences[0] === fences[0]) continue;
      this.nodes[grant.node].recordPermitFence(keys[0], token, fences[0], timeout).catch(() => undefined);
      recorded++;
    }
  }

  /**
   * How many nodes must hold a lock of this shape. A mutex, a writer or a reader: a majority (any reader's
   * quorum and any writer's share a node, which refuses one of them). A semaphore of limit n: each node
   * admits n holders, so with q nodes per holder up to floor(N·n/q) holders fit on N nodes, and a majority
   * is not enough (N = 3, n = 3, q = 2: four holders). q = floor(N·n/(n+1)) + 1 makes n + 1 impossible.
   */
  quorumFor(shape: LockShape | undefined): number {
    return shape?.kind === 'semaphore' ? semaphoreQuorumOf(this.nodes.length, shape.limit) : this.quorum;
  }

  async extend(request: AcquireRequest): Promise<number | null> {
    // Two nodes are one server: a lease granted before that was found may stand on a vote counted twice, so
    // none is renewed (its holder loses the lock, told why: see Lease).
    const failure = this.servers.failure();
    if (failure) throw failure;
    const ttl = Math.max(1, Math.round(request.ttl));
    const timeout = this.timeout(ttl);
    const startedAt = performance.now();
    const quorum = this.quorumFor(request.shape);
    const round = new QuorumRound(this.nodes.length, (node) => this.nodes[node].extend(request, timeout));
    const verdict = await round.decide<Verdict>((answers, pending) => {
      const extended = answers.filter((answer) => answer.ok && answer.value).length;
      const refused = answers.filter((answer) => answer.ok && !answer.value).length;
      if (extended >= quorum) return 'for';
      // Refusals are proof: a quorum can no longer hold the lock with this token.
      if (refused > this.nodes.length - quorum) return 'against';
      // Unanswered nodes might still hold it: not proof of loss, so the lease retries until its deadline.
      return pending === 0 ? 'unavailable' : undefined;
    });
    if (verdict === 'unavailable') {
      const answers = round.answersSoFar();
      const extended = answers.filter((answer) => answer.ok && answer.value).length;
      throw this.unavailable(
        request.keys,
        'extend',
        `renewed on ${extended} of ${this.nodes.length} Redlock nodes, a quorum is ${quorum}; ` +
          'the others refused or did not answer',
        answers,
      );
    }
    if (verdict === 'against') return null;
    const validUntil = startedAt + ttl - clockDrift(ttl, this.options.driftFactor);
    // Confirmed too late to be worth anything (the event loop was blocked, or the nodes were slow).
    return validUntil > performance.now() ? validUntil : null;
  }

  async release(keys: readonly LockKeyNames[], token: string, holdFor = 0, shape?: LockShape): Promise<boolean> {
    const timeout = this.timeout(undefined);
    // A permit needs q nodes to count (quorumFor): once N - q + 1 nodes dropped it, it no longer holds a
    // quorum anywhere, and the release is done — with one node down a 3-node semaphore (q = 3) would
    // otherwise never release (review L2). A mutex or a reader still needs its usual majority.
    const quorum = shape?.kind === 'semaphore' ? this.nodes.length - this.quorumFor(shape) + 1 : this.quorumFor(shape);
    // With holdFor (minHold): every node that granted keeps the lease until grant + minHold.
    const announce = this.hub.watched(keys);
    const release = { keys, token, holdFor, shape, announce };
    const round = new QuorumRound(this.nodes.length, (node) => this.nodes[node].release(release, timeout));
    // The deletes are now queued on every node's connection: a local waiter woken here sends its attempt
    // right behind them on the same connections, so each node runs it just after the delete (a handover in
    // one round trip). The nodes' PUBLISH of this release (announced, since this process watches the key)
    // carry the same token, and the hub counts it once.
    // Not for a hold-over (minHold): the key stays held, and the PUBLISH (where a waiter was refused, or with
    // this process watching) tells the waiters how long.
    if (holdFor <= 0) for (const key of keys) this.hub.handOver(key.channel, token);
    const verdict = await round.decide<Verdict>((answers) => {
      let released = 0;
      for (const answer of answers) if (answer.ok && answer.value === keys.length) released++;
      return this.tally(released, answers, quorum);
    });
    if (verdict === 'unavailable') {
      throw this.unavailable(keys, 'release', this.tooFewNodes(round.answersSoFar(), quorum), round.answersSoFar());
    }
    return verdict === 'for';
  }

  /** Removes a writer's intent from every node that answers (each expires on its own otherwise). */
  async withdraw(key: LockKeyNames, token: string, announce: boolean): Promise<void> {
    const timeout = this.timeout(undefined);
    await this.everyNode((node) => node.withdraw(key, token, timeout, { announce }));
  }

  async isLocked(key: LockKeyNames): Promise<boolean> {
    const timeout = this.timeout(undefined);
    const round = new QuorumRound(this.nodes.length, (node) => this.nodes[node].exists(key, timeout));
    const verdict = await round.decide<Verdict>((answers) =>
      this.tally(answers.filter((answer) => answer.ok && answer.value).length, answers),
    );
    if (verdict === 'unavailable') {
      throw this.unavailable([key], 'isLocked', this.tooFewNodes(round.answersSoFar()), round.answersSoFar());
    }
    return verdict === 'for';
  }

  watch(keys: readonly LockKeyNames[]): ReleaseWatch {
    return this.hub.watch(keys);
  }

  hasWaiters(keys: readonly LockKeyNames[]): boolean {
    return this.hub.hasSleepers(keys);
  }

  async ping(): Promise<void> {
    const failure = this.servers.failure();
    if (failure) throw failure;
    const timeout = this.timeout(undefined);
    const round = new QuorumRound(this.nodes.length, (node) => this.nodes[node].ping(timeout));
    const verdict = await round.decide<Verdict>((answers) =>
      this.tally(answers.filter((answer) => answer.ok).length, answers),
    );
    if (verdict !== 'for') throw this.unavailable([], 'ping', this.tooFewNodes(round.answersSoFar()), round.answersSoFar());
  }

  /**
   * What a quorum says: every node is asked, and a holder is reported when a quorum of nodes (for its
   * shape, see quorumFor) hold the same value. Its ttlLeft is how long a quorum will still hold it (the
   * quorum-th longest PTTL), its fence the one its Lock reports (see fenceOf).
   */
  async inspect(key: LockKeyNames): Promise<LockState | null> {
    const timeout = this.timeout(undefined);
    const answers = await this.everyNode((node) => node.inspect(key, timeout));
    if (answers.filter((answer) => answer.ok).length < this.quorum) {
      throw this.unavailable([key], 'inspect', this.tooFewNodes(answers), answers);
    }
    const byValue = new Map<string, { shape: LockShape; states: NodeHolder[] }>();
    for (const answer of answers) {
      if (!answer.ok || !answer.value) continue;
      for (const holder of answer.value.holders) {
        const entry = byValue.get(holder.value) ?? { shape: answer.value.shape, states: [] };
        entry.states.push(holder);
        byValue.set(holder.value, entry);
      }
    }
    const holders: NodeHolder[] = [];
    let kind: LockState['kind'] = 'mutex';
    for (const [value, { shape, states }] of byValue) {
      const quorum = this.quorumFor(shape);
      if (states.length < quorum) continue;
      kind = kindOf(shape);
      const ttls = states.map((state) => state.ttlLeft).sort((a, b) => b - a);
      holders.push({ value, ttlLeft: ttls[quorum - 1], fence: fenceOf(states, quorum) });
    }
    return holders.length > 0 ? { kind, holders } : null;
  }

  /**
   * Deletes the lease on every node that answers, whoever holds it (each node announces its part). Fewer
   * than a quorum answering is a LockUnavailableError: the lock might still be held on a quorum.
   */
  async forceRelease(key: LockKeyNames): Promise<string[]> {
    const timeout = this.timeout(undefined);
    const answers = await this.everyNode((node) => node.forceRelease(key, timeout));
    if (answers.filter((answer) => answer.ok).length < this.quorum) {
      throw this.unavailable([key], 'forceRelease', `${this.tooFewNodes(answers)}; those that answered deleted their part`, answers);
    }
    const evicted = new Set<string>();
    for (const answer of answers) if (answer.ok) for (const value of answer.value) evicted.add(value);
    return [...evicted];
  }

  /** Up while a quorum of nodes answers PING, with each node's answer (all nodes are waited for, each bounded). */
  async health(): Promise<StoreHealth> {
    const timeout = this.timeout(undefined);
    const nodes = await Promise.all(
      this.nodes.map(async (node): Promise<NodeHealth> => {
        const startedAt = performance.now();
        try {
          await node.ping(timeout);
          return { node: node.label, status: 'up', latencyMs: roundMs(performance.now() - startedAt) };
        } catch (error) {
          // With the connection's last error (connect ECONNREFUSED …) when the failure itself is ioredis' retry limit.
          return { node: node.label, status: 'down', message: node.describeFailure(error) };
        }
      }),
    );
    const up = nodes.filter((node) => node.status === 'up').length;
    const failure = this.servers.failure();
    if (failure) return { up: false, quorum: this.quorum, nodes, message: failure.message, error: failure };
    if (up >= this.quorum) return { up: true, quorum: this.quorum, nodes };
    const message = `only ${up} of ${this.nodes.length} Redlock nodes answered, a quorum is ${this.quorum}`;
    const failures = nodes.flatMap((node) => (node.status === 'down' ? [`${node.node}: ${node.message}`] : []));
    const error = new LockUnavailableError([], `ping failed on Redlock: ${message} (${failures.join('; ')})`);
    return { up: false, quorum: this.quorum, nodes, message, error };
  }

  async close(): Promise<void> {
    this.hub.clear();
    await Promise.all(this.nodes.map((node) => node.close()));
  }

  /** Sends to every node and waits for all answers (each node command is bounded by its timeout). */
  private async everyNode<T>(send: (node: RedisLockNode) => Promise<T>): Promise<readonly NodeAnswer<T>[]> {
    const round = new QuorumRound(this.nodes.length, (index) => send(this.nodes[index]));
    await round.decide((_answers, pending) => (pending === 0 ? true : undefined));
    return round.answersSoFar();
  }

  /** Acquire votes: a refusal is a busy key (or foreign data at it); see verdict(). */
  private acquireVerdict(answers: readonly NodeAnswer<NodeAcquireReply>[], quorum: number): Verdict | undefined {
    // Counted in one pass, no arrays: this runs on every answer of every attempt.
    let granted = 0;
    let failed = 0;
    let busy = 0;
    for (const answer of answers) {
      if (answer.ok) {
        if (answer.value.acquired) granted++;
        else busy++;
      } else if (!isCallersMistake(answer.error)) failed++;
    }
    const verdict = this.verdict(granted, failed, answers.length, quorum);
    // A key held as another kind (or foreign data) is the caller's mistake only when a majority says so (see
    // acquire): hear the other nodes out before calling it busy.
    const mistakes = answers.length - granted - failed - busy;
    if (verdict === 'against' && mistakes > 0 && mistakes < this.quorum && answers.length < this.nodes.length) return undefined;
    return verdict;
  }

  /** Yes/no votes: `yes` on a quorum is 'for'; too many failures 'unavailable'; a quorum out of reach 'against'. */
  private tally(yes: number, answers: readonly NodeAnswer<unknown>[], quorum = this.quorum): Verdict | undefined {
    let failed = 0;
    for (const answer of answers) if (!answer.ok) failed++;
    return this.verdict(yes, failed, answers.length, quorum);
  }

  /**
   * 'for' on a quorum of yes; 'unavailable' when more nodes failed than can be spared; 'against' (busy)
   * once the refusals alone leave no quorum, or once every node has answered without a quorum. Until then
   * a node still to answer could fail and make it 'unavailable': an unreachable store is never "busy".
   */
  private verdict(yes: number, failed: number, answered: number, quorum: number): Verdict | undefined {
    const spare = this.nodes.length - quorum;
    if (yes >= quorum) return 'for';
    if (failed > spare) return 'unavailable';
    const refused = answered - yes - failed;
    if (refused > spare || answered === this.nodes.length) return 'against';
    return undefined;
  }

  /**
   * Takes back a failed attempt, silently (UNDO_SCRIPT: a partial grant is no release and wakes nobody),
   * so that neither the next attempt nor another client meets a partial lock. It goes to every node that
   * may hold the attempt's keys: all but those that answered busy (the acquire script is all-or-none on a
   * node). It is awaited from nodes that granted; nodes that failed or have not answered yet get it
   * without waiting: it queues behind the acquire on the same connection, so it runs right after a late
   * acquire once they answer again. So a verdict, busy included, never waits for silent nodes.
   * `announce`: the attempt was granted on a quorum (then failed its fences or its validity), so it is
   * released instead, announced like any release (review of the waiter rule, L2): other attempts may have
   * been refused for it, and their waiters would otherwise sleep until its lease ends.
   */
  private async undo(
    round: QuorumRound<NodeAcquireReply>,
    keys: readonly LockKeyNames[],
    token: string,
    timeout: number,
    shape: LockShape | undefined,
    announce = false,
  ): Promise<void> {
    const answered = new Map(round.answersSoFar().map((answer) => [answer.node, answer]));
    const watched = announce && this.hub.watched(keys);
    const undo = (node: RedisLockNode): Promise<void> =>
      (announce ? node.release({ keys, token, shape, announce: watched }, timeout) : node.undo(keys, token, timeout, shape)).then(
        () => undefined,
        () => undefined,
      );
    await Promise.all(
      this.nodes.map(async (node, index) => {
        const answer = answered.get(index);
        if (!answer || !answer.ok) void undo(node);
        else if (answer.value.acquired) await undo(node);
      }),
    );
  }

  /** Whether a reader, or another holder, is named by a quorum of the refusals (see namesReaders). */
  private readersHoldQuorum(answers: readonly NodeAnswer<NodeAcquireReply>[]): boolean {
    const counts = new Map<string, number>();
    for (const answer of answers) {
      if (!answer.ok || answer.value.acquired) continue;
      for (const holder of answer.value.readers ?? [answer.value.holder]) {
        const count = (counts.get(holder) ?? 0) + 1;
        if (count >= this.quorum) return true;
        counts.set(holder, count);
      }
    }
    return false;
  }

  /** The round's answers once every node answered, or `ms` passed; nodes presumed down are not waited for. */
  private async hearOut(round: QuorumRound<NodeAcquireReply>, ms: number): Promise<readonly NodeAnswer<NodeAcquireReply>[]> {
    const awaited = round.answers.filter((_answer, index) => !this.nodes[index].failing);
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([Promise.all(awaited), new Promise<void>((resolve) => (timer = setTimeout(resolve, ms)))]);
    clearTimeout(timer);
    return round.answersSoFar();
  }

  /**
   * When a busy key frees up for this client: the key is granted once enough of the busy nodes' leases
   * expire for the nodes left to make a quorum. -1 when no busy node reported a time.
   */
  private retryAfter(busy: readonly number[], failed: number, quorum: number): number {
    const known = busy.filter((ms) => ms >= 0).sort((a, b) => a - b);
    if (known.length === 0) return -1;
    const canStayBusy = Math.max(0, this.nodes.length - failed - quorum);
    const mustExpire = Math.min(known.length, Math.max(1, busy.length - canStayBusy));
    return Math.max(1, known[mustExpire - 1]);
  }

  private tooFewNodes(answers: readonly NodeAnswer<unknown>[], quorum = this.quorum): string {
    const answered = answers.filter((answer) => answer.ok).length;
    return `only ${answered} of ${this.nodes.length} Redlock nodes answered, a quorum is ${quorum}`;
  }

  private unavailable(
    keys: readonly LockKeyNames[],
    operation: string,
    detail: string,
    answers: readonly NodeAnswer<unknown>[],
  ): LockUnavailableError {
    const failures = answers.flatMap((answer) =>
      answer.ok ? [] : [`${this.nodes[answer.node].label}: ${this.nodes[answer.node].describeFailure(answer.error)}`],
    );
    const cause = answers.find((answer) => !answer.ok);
    return new LockUnavailableError(
      keys.map((key) => key.name),
      `${operation} failed on Redlock: ${detail}${failures.length > 0 ? ` (${failures.join('; ')})` : ''}`,
      cause && !cause.ok ? { cause: cause.error } : undefined,
    );
  }

  private async subscribe(channel: string): Promise<void> {
    const timeout = this.timeout(undefined);
    const round = new QuorumRound(this.nodes.length, (node) => this.nodes[node].subscribe(channel, timeout));
    // A quorum of listening nodes suffices: a lock is held, and so released, on a quorum, and two quorums
    // share a node. Nodes that subscribe late still deliver from then on.
    const verdict = await round.decide<Verdict>((answers) =>
      this.tally(answers.filter((answer) => answer.ok).length, answers),
    );
    if (verdict !== 'for') {
      throw this.unavailable([], 'watch', this.tooFewNodes(round.answersSoFar()), round.answersSoFar());
    }
  }

  private timeout(ttl: number | undefined): number {
    return this.options.commandTimeout ?? commandTimeoutFor(ttl);
  }
}

/**
 * A holder's fence from what its nodes record: the value recorded on at least a quorum of them. The grant's
 * fence F (its Lock.fence) is the highest of its granting quorum, and the fence write-back leaves F on at
 * least a quorum of nodes before the grant is returned (fence-write-back.ts): for a mutex the key's counter
 * there (nobody else increments it while the holder holds the node), for a permit or reader its own field
 * in the record. A node that granted after the quorum was in recorded what its own counter gave, which may
 * be higher than F (before, inspect reported the largest value, so a reader granted 1 could be listed with
 * 4) or lower. Two values cannot both be on a quorum. When none is (a grant whose write-back is still under
 * way, or nodes of its quorum that lost the key, e.g. restarted without persistence), the grant's fence
 * cannot be told from what the nodes hold, and the largest recorded value is reported, as before.
 */
function fenceOf(states: readonly NodeHolder[], quorum: number): number {
  const counts = new Map<number, number>();
  for (const { fence } of states) {
    const count = (counts.get(fence) ?? 0) + 1;
    if (count >= quorum) return fence;
    counts.set(fence, count);
  }
  return Math.max(...states.map((state) => state.fence));
}

/**
 * Whether a writer was refused by readers that every such node named (WRITE_ACQUIRE_SCRIPT names up to 32): only
 * then can the store tell readers that hold a quorum from partial grants. False at once for any other refusal.
 */
function namesReaders(answers: readonly NodeAnswer<NodeAcquireReply>[]): boolean {
  let named = false;
  for (const answer of answers) {
    if (!answer.ok || answer.value.acquired || answer.value.readers === undefined) continue;
    if (answer.value.readers === UNNAMED_READERS) return false;
    named = true;
  }
  return named;
}

/** A node's refusal that is the caller's to fix, not the node's failure: foreign data, or a key held as another kind. */
function isCallersMistake(error: unknown): boolean {
  return error instanceof InvalidLockKeyError || error instanceof LockOptionsError;
}

/** Whether a node's answer says it recorded the writer's intent (refused, queued ahead of new readers). */
function recordedIntent(answer: NodeAnswer<NodeAcquireReply>): boolean {
  return answer.ok && !answer.value.acquired && answer.value.queued === true;
}
