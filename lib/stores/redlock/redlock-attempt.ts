// One Redlock acquire attempt on every node: its verdict, its fences, its undo, and the intents its outcome does not
// report.
import type { AcquireOutcome, AcquireRequest, LockKeyNames } from '../lock-store.interface';
import type { NodeAcquireReply } from '../redis/node-replies';
import type { RedisLockNode } from '../redis/redis-lock-node';
import { isPermit } from '../shared/lock-shapes';
import type { ReleaseHub } from '../shared/release-hub';
import { type StoreTiming, leaseTtl } from '../shared/timing';
import { withdrawalMessage } from '../shared/withdrawal-message';
import { isCallersMistake, namesReaders, readersHoldQuorum, refusedOutcome } from './attempt-refusal';
import { fencesAgreed, type NodeGrant, writeBackFences } from './fence-write-back';
import type { NodeAnswer, QuorumRound } from './quorum-round';
import type { RedlockNodes, Verdict } from './redlock-nodes';

/** How long a writer refused by readers without a quorum waits for the other nodes' answers (see attempt). */
const READERS_HEAR_OUT_MS = 50;

/**
 * The acquire attempts of a Redlock store. Each sends the single-node script to all nodes at once and is
 * decided as soon as a quorum answered for it, or so many answered against (busy, or failed) that a quorum is
 * impossible; slow nodes are then no longer waited for. A grant is valid for ttl − elapsed − drift from before
 * the first command was sent, and is never returned once that is over; a failed attempt is undone on every
 * node before it returns (see undo).
 */
export class RedlockAttempts {
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

  constructor(
    private readonly redlock: RedlockNodes,
    private readonly hub: ReleaseHub,
    private readonly timing: StoreTiming,
  ) {}

  async acquire(request: AcquireRequest): Promise<AcquireOutcome> {
    if (!this.redlock.nodes.some((node) => node.failing)) return this.attempt(request);
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
    const redlock = this.redlock;
    const ttl = leaseTtl(request.ttl);
    const timeout = this.timing.timeout(ttl);
    const { keys, token, shape } = request;
    const quorum = redlock.quorumFor(shape);
    const startedAt = performance.now();
    // One floor for the whole round (see fenceFloor): nodes whose counters agree give the same fence (a permit's
    // nodes, the same block), and no write-back is needed.
    const sent = { ...request, fenceFloor: fenceFloor() };
    const round = redlock.round((node) => node.acquire(sent, timeout));
    const verdict = await round.decide((answers) => this.acquireVerdict(answers, quorum));
    const answers = round.answersSoFar();
    // A writer queued on any node withdraws its intent from every node when done waiting.
    const queued = answers.some(recordedIntent);
    // Only a single-key mutex or writer records intents (see NodeAcquire), never on a final attempt; one the
    // service already keeps queued (request.queued) it withdraws from every node itself when done.
    if (keys.length === 1 && !request.queued && !request.final && !isPermit(shape) && (verdict === 'for' || !queued)) {
      this.withdrawUnreported(round, answers, { key: keys[0], token, timeout, granted: verdict === 'for' });
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
      // When a quorum of the granting nodes already gave (or, for permits, reached) the highest fences, nothing is
      // written back and no round waited for: the rule, nodes whose counters agree taking one floor per round to
      // the same value (for permits, the same block).
      let fences: number[] | undefined;
      // Taken back after all, the grant is announced as a release: it held a quorum, so waiters refused for it
      // sleep until a release of it (or its lease's end) and this caller, throwing, will never release it.
      try {
        fences =
          fencesAgreed(grants, quorum) ??
          (await writeBackFences(redlock.nodes, grants, keys, token, quorum, timeout, shape));
      } catch (error) {
        await this.undo(round, request, timeout, { asRelease: true });
        throw error;
      }
      const validUntil = this.timing.validUntil(startedAt, ttl);
      if (fences && validUntil > performance.now()) {
        if (isPermit(shape)) recordPermitFence(redlock.nodes, grants, keys, token, fences, quorum, timeout);
        return { acquired: true, fences, validUntil, vacant };
      }
      await this.undo(round, request, timeout, { asRelease: true });
      throw redlock.unavailable(
        keys,
        'acquire',
        fences
          ? `a quorum granted the lock only after its validity (ttl ${ttl} ms − elapsed − drift) had run out; ` +
              'the nodes answer too slowly for this ttl (or the event loop was blocked)'
          : `fewer than ${quorum} of ${redlock.count} nodes confirmed the lock's fencing token`,
        answers,
      );
    }

    await this.undo(round, request, timeout);
    if (verdict === 'unavailable') {
      throw redlock.unavailable(keys, 'acquire', redlock.tooFewNodes(answers, quorum), answers);
    }
    let heard = answers;
    if (namesReaders(heard) && !readersHoldQuorum(heard, redlock.quorum) && heard.length < redlock.count) {
      // A writer refused by readers none of whom holds a quorum of the nodes heard: partial reader grants being
      // undone (silently), or readers granted by quorums that include the nodes not heard yet. Hear those out
      // (briefly: a node presumed down, or one slower than READERS_HEAR_OUT_MS, is not waited for).
      heard = await this.hearOut(round, READERS_HEAR_OUT_MS);
    }
    return refusedOutcome(redlock, { heard, quorum, shape, queued, timeout });
  }

  /** Acquire votes: a refusal is a busy key (or foreign data at it); see RedlockNodes.verdict. */
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
    const verdict = this.redlock.verdict(granted, failed, answers.length, quorum);
    // A key held as another kind (or foreign data) is the caller's mistake only when a majority says so (see
    // refusedOutcome): hear the other nodes out before calling it busy.
    const mistakes = answers.length - granted - failed - busy;
    if (verdict === 'against' && mistakes > 0 && mistakes < this.redlock.quorum && answers.length < this.redlock.count)
      return undefined;
    return verdict;
  }

  /**
   * Takes back a failed attempt, silently (UNDO_SCRIPT: a partial grant is no release and wakes nobody),
   * so that neither the next attempt nor another client meets a partial lock. It goes to every node that
   * may hold the attempt's keys: all but those that answered busy (the acquire script is all-or-none on a
   * node). It is awaited from nodes that granted; nodes that failed or have not answered yet get it
   * without waiting: it queues behind the acquire on the same connection, so it runs right after a late
   * acquire once they answer again. So a verdict, busy included, never waits for silent nodes.
   * `asRelease`: the attempt was granted on a quorum (then failed its fences or its validity), so it is
   * released instead, announced like any release: other attempts may have been refused for it, and their
   * waiters would otherwise sleep until its lease ends.
   */
  private async undo(
    round: QuorumRound<NodeAcquireReply>,
    request: AcquireRequest,
    timeout: number,
    how: { asRelease?: boolean } = {},
  ): Promise<void> {
    const { keys, token, shape } = request;
    const answered = new Map(round.answersSoFar().map((answer) => [answer.node, answer]));
    const release = how.asRelease ? { keys, token, shape, announce: this.hub.watched(keys) } : undefined;
    const undo = (node: RedisLockNode): Promise<void> =>
      (release ? node.release(release, timeout) : node.undo(keys, token, timeout, shape)).then(
        () => undefined,
        () => undefined,
      );
    await Promise.all(
      this.redlock.nodes.map(async (node, index) => {
        const answer = answered.get(index);
        if (!answer || !answer.ok) void undo(node);
        else if (answer.value.acquired) await undo(node);
      }),
    );
  }

  /** The round's answers once every node answered, or `ms` passed; nodes presumed down are not waited for. */
  private async hearOut(
    round: QuorumRound<NodeAcquireReply>,
    ms: number,
  ): Promise<readonly NodeAnswer<NodeAcquireReply>[]> {
    const awaited = round.answers.filter((_answer, index) => !this.redlock.nodes[index].failing);
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([Promise.all(awaited), new Promise<void>((resolve) => (timer = setTimeout(resolve, ms)))]);
    clearTimeout(timer);
    return round.answersSoFar();
  }

  /**
   * Withdraws the writer's intents this attempt recorded that its outcome will not report (the caller
   * withdraws only those a busy outcome reports as `queued`): recorded on a node that answered after the
   * verdict (a node with readers answers a writer a script later, see NodeAcquire), or beside a grant
   * (`granted`: a grant never says queued). Left alone, such an intent lasts a writer ttl (renewed by the
   * writer's next attempts) and its end is announced to nobody: readers refused by intents on N - quorum + 1
   * nodes would sleep until then, and a release that woke one of them would be spent on a refused reader. A
   * late one is withdrawn with an announcement, so the readers it refused look again, by a withdrawal made now
   * in the token's order on that node and sent once the answer shows the intent (see withdrawIfRecorded); one
   * beside a grant silently, before the grant's release, which wakes them.
   */
  private withdrawUnreported(
    round: QuorumRound<NodeAcquireReply>,
    answers: readonly NodeAnswer<NodeAcquireReply>[],
    {
      key,
      token,
      timeout,
      granted,
    }: { readonly key: LockKeyNames; readonly token: string; readonly timeout: number; readonly granted: boolean },
  ): void {
    const nodes = this.redlock.nodes;
    if (granted) {
      for (const answer of answers) {
        if (recordedIntent(answer))
          nodes[answer.node].withdraw(key, token, timeout, { announce: false }).catch(() => undefined);
      }
    }
    if (answers.length === nodes.length) return;
    // Its own occasion: this writer may withdraw again (a later attempt's late node, or when it gives up), and
    // a repeat of the same message would wake nobody (see withdrawalMessage).
    let message: string | undefined;
    const occasion = (): string => (message ??= withdrawalMessage(token, `late${++this.lateWithdrawals}`));
    round.answers.forEach((late, index) => {
      if (answers.some((answer) => answer.node === index)) return;
      const node = nodes[index];
      if (node.secondScriptInFlight(token)) {
        // Its answer may record the intent; the token's next attempt will queue behind this withdrawal.
        node.withdrawIfRecorded(key, token, timeout, late.then(recordedIntent), occasion()).catch(() => undefined);
      } else if (granted) {
        // Still at its first script: it may yet take a second one. No next attempt of this token follows a
        // grant, so the withdrawal can wait for the answer.
        void late
          .then((answer) =>
            recordedIntent(answer)
              ? node.withdraw(key, token, timeout, { announce: true, message: occasion() })
              : undefined,
          )
          .catch(() => undefined);
      }
      // Otherwise the busy or failed attempt's undo, sent right after this, supersedes the second script.
    });
  }
}

/**
 * Records a permit's or reader's fence (the grant's, F) on a quorum of the nodes that granted it, for inspect,
 * which reports the value a quorum records. Each node recorded the value its own counter gave, by stride (see
 * PERMIT_ACQUIRE_SCRIPT): F on one of them, another value on each of the others. So F is recorded on as many
 * others as a quorum needs (the write-back, when one ran, recorded it on the nodes it raised already; sending
 * them another is harmless, and rare). Nothing waits for it: the grant's fence is established without it (the
 * counters reached F). A node that no longer holds the permit (released meanwhile: the release went first on
 * the same connection) changes nothing. Nodes beyond the quorum keep their own values: one such extra script
 * per node and grant would cost Redis about as much as the grant's own (see docs/performance.md).
 */
function recordPermitFence(
  nodes: readonly RedisLockNode[],
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
    nodes[grant.node].recordPermitFence(keys[0], token, fences[0], timeout).catch(() => undefined);
    recorded++;
  }
}

/** Whether a node's answer says it recorded the writer's intent (refused, queued ahead of new readers). */
function recordedIntent(answer: NodeAnswer<NodeAcquireReply>): boolean {
  return answer.ok && !answer.value.acquired && answer.value.queued === true;
}

/**
 * A Redlock round's fence floor: this host's wall clock in µs (ms resolution). Sent to every node of the round
 * instead of each node reading its own clock, so that a quorum whose counters agree gives one fence (permits
 * too: their nodes' blocks then agree); the clock assumption is then about the hosts that run the library
 * (docs/design.md, "Fences across data loss").
 */
function fenceFloor(): number {
  return Date.now() * 1000;
}
