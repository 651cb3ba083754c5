// The lock store over N independent Redis masters (Redlock): each LockStore operation as a quorum round over the nodes.
import type { NodeHealth, StoreHealth } from '../store-health';
import type { RedlockNode } from '../../options/lock-options.interface';
import type {
  AcquireOutcome,
  AcquireRequest,
  LockKeyNames,
  LockShape,
  LockState,
  LockStore,
} from '../lock-store.interface';
import type { NodeHolder } from '../redis/node-replies';
import { probe } from '../shared/health-probe';
import { kindOf } from '../shared/lock-shapes';
import { RedisStoreBase } from '../shared/redis-store-base';
import { storeUnavailable } from '../shared/store-unavailable';
import { type RedisStoreOptions, leaseTtl } from '../shared/timing';
import { DistinctServers } from './distinct-servers';
import { RedlockAttempts } from './redlock-attempt';
import { RedlockNodes, type Verdict } from './redlock-nodes';

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
 * quorum is released and announced instead: see RedlockAttempts); an unreachable majority is a
 * LockUnavailableError, a busy key is a normal "not acquired"; and fences stay strictly increasing when the
 * quorum moves between nodes (fence-write-back.ts).
 */
export class RedlockLockStore extends RedisStoreBase implements LockStore {
  readonly kind = 'redlock';
  private readonly redlock: RedlockNodes;
  private readonly attempts: RedlockAttempts;
  /** Finds two nodes that reach one server, which the options check at bootstrap cannot see. */
  private readonly servers: DistinctServers;

  constructor(connections: readonly RedlockNode[], options: RedisStoreOptions) {
    super(options);
    this.redlock = new RedlockNodes(connections, options.minReplicas);
    this.attempts = new RedlockAttempts(this.redlock, this.hub, this.timing);
    this.servers = new DistinctServers(this.redlock.nodes, connections);
    // Every node that held a released lock announces it (where an attempt was refused there, or this process
    // watches the key: see RELEASE_SCRIPT), with the releasing token: the hub counts it once.
    for (const node of this.redlock.nodes) node.onRelease((channel, token) => this.hub.announce(channel, token));
  }

  async acquire(request: AcquireRequest): Promise<AcquireOutcome> {
    if (!this.servers.verified) {
      const failure = this.servers.failure();
      if (failure) throw failure;
      this.servers.check(this.timeout(undefined));
    }
    return this.attempts.acquire(request);
  }

  async extend(request: AcquireRequest): Promise<number | null> {
    // Two nodes are one server: a lease granted before that was found may stand on a vote counted twice, so
    // none is renewed (its holder loses the lock, told why: see Lease).
    const failure = this.servers.failure();
    if (failure) throw failure;
    const redlock = this.redlock;
    const ttl = leaseTtl(request.ttl);
    const timeout = this.timeout(ttl);
    const startedAt = performance.now();
    const quorum = redlock.quorumFor(request.shape);
    const round = redlock.round((node) => node.extend(request, timeout));
    const verdict = await round.decide<Verdict>((answers, pending) => {
      const extended = answers.filter((answer) => answer.ok && answer.value).length;
      const refused = answers.filter((answer) => answer.ok && !answer.value).length;
      if (extended >= quorum) return 'for';
      // Refusals are proof: a quorum can no longer hold the lock with this token.
      if (refused > redlock.count - quorum) return 'against';
      // Unanswered nodes might still hold it: not proof of loss, so the lease retries until its deadline.
      return pending === 0 ? 'unavailable' : undefined;
    });
    if (verdict === 'unavailable') {
      const answers = round.answersSoFar();
      const extended = answers.filter((answer) => answer.ok && answer.value).length;
      throw redlock.unavailable(
        request.keys,
        'extend',
        `renewed on ${extended} of ${redlock.count} Redlock nodes, ` +
          `a quorum is ${quorum}; the others refused or did not answer`,
        answers,
      );
    }
    if (verdict === 'against') return null;
    const validUntil = this.timing.validUntil(startedAt, ttl);
    // Confirmed too late to be worth anything (the event loop was blocked, or the nodes were slow).
    return validUntil > performance.now() ? validUntil : null;
  }

  async release(keys: readonly LockKeyNames[], token: string, holdFor = 0, shape?: LockShape): Promise<boolean> {
    const redlock = this.redlock;
    const timeout = this.timeout(undefined);
    // A permit needs q nodes to count (quorumFor): once N - q + 1 nodes dropped it, it no longer holds a
    // quorum anywhere, and the release is done; with one node down a 3-node semaphore (q = 3) would otherwise
    // never release. A mutex or a reader still needs its usual majority.
    const quorum =
      shape?.kind === 'semaphore' ? redlock.count - redlock.quorumFor(shape) + 1 : redlock.quorumFor(shape);
    // With holdFor (minHold): every node that granted keeps the lease until grant + minHold.
    const release = { keys, token, holdFor, shape, announce: this.hub.watched(keys) };
    const round = redlock.round((node) => node.release(release, timeout));
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
      return redlock.tally(released, answers, quorum);
    });
    if (verdict === 'unavailable') {
      throw redlock.unavailable(
        keys,
        'release',
        redlock.tooFewNodes(round.answersSoFar(), quorum),
        round.answersSoFar(),
      );
    }
    return verdict === 'for';
  }

  /** Removes a writer's intent from every node that answers (each expires on its own otherwise). */
  async withdraw(key: LockKeyNames, token: string, announce: boolean): Promise<void> {
    const timeout = this.timeout(undefined);
    await this.redlock.everyNode((node) => node.withdraw(key, token, timeout, { announce }));
  }

  async isLocked(key: LockKeyNames): Promise<boolean> {
    const redlock = this.redlock;
    const timeout = this.timeout(undefined);
    const round = redlock.round((node) => node.exists(key, timeout));
    const verdict = await round.decide<Verdict>((answers) =>
      redlock.tally(answers.filter((answer) => answer.ok && answer.value).length, answers),
    );
    if (verdict === 'unavailable') {
      throw redlock.unavailable([key], 'isLocked', redlock.tooFewNodes(round.answersSoFar()), round.answersSoFar());
    }
    return verdict === 'for';
  }

  async ping(): Promise<void> {
    const failure = this.servers.failure();
    if (failure) throw failure;
    const redlock = this.redlock;
    const timeout = this.timeout(undefined);
    const round = redlock.round((node) => node.ping(timeout));
    const verdict = await round.decide<Verdict>((answers) =>
      redlock.tally(answers.filter((answer) => answer.ok).length, answers),
    );
    if (verdict !== 'for')
      throw redlock.unavailable([], 'ping', redlock.tooFewNodes(round.answersSoFar()), round.answersSoFar());
  }

  /**
   * What a quorum says: every node is asked, and a holder is reported when a quorum of nodes (for its
   * shape, see quorumFor) hold the same value. Its ttlLeft is how long a quorum will still hold it (the
   * quorum-th longest PTTL), its fence the one its Lock reports (see fenceOf).
   */
  async inspect(key: LockKeyNames): Promise<LockState | null> {
    const redlock = this.redlock;
    const timeout = this.timeout(undefined);
    const answers = await redlock.everyNode((node) => node.inspect(key, timeout));
    if (answers.filter((answer) => answer.ok).length < redlock.quorum) {
      throw redlock.unavailable([key], 'inspect', redlock.tooFewNodes(answers), answers);
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
      const quorum = redlock.quorumFor(shape);
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
    const redlock = this.redlock;
    const timeout = this.timeout(undefined);
    const answers = await redlock.everyNode((node) => node.forceRelease(key, timeout));
    if (answers.filter((answer) => answer.ok).length < redlock.quorum) {
      throw redlock.unavailable(
        [key],
        'forceRelease',
        `${redlock.tooFewNodes(answers)}; those that answered deleted their part`,
        answers,
      );
    }
    const evicted = new Set<string>();
    for (const answer of answers) if (answer.ok) for (const value of answer.value) evicted.add(value);
    return [...evicted];
  }

  /** Up while a quorum of nodes answers PING, with each node's answer (all nodes are waited for, each bounded). */
  async health(): Promise<StoreHealth> {
    const { nodes: redisNodes, quorum, count } = this.redlock;
    const timeout = this.timeout(undefined);
    const nodes = await Promise.all(
      redisNodes.map(async (node): Promise<NodeHealth> => {
        const pinged = await probe(() => node.ping(timeout));
        if (pinged.ok) return { node: node.label, status: 'up', latencyMs: pinged.latencyMs };
        // With the connection's last error (connect ECONNREFUSED …) when the failure itself is ioredis' retry limit.
        return { node: node.label, status: 'down', message: node.describeFailure(pinged.error) };
      }),
    );
    const up = nodes.filter((node) => node.status === 'up').length;
    const failure = this.servers.failure();
    if (failure) return { up: false, quorum, nodes, message: failure.message, error: failure };
    if (up >= quorum) return { up: true, quorum, nodes };
    const message = `only ${up} of ${count} Redlock nodes answered, a quorum is ${quorum}`;
    const failures = nodes.flatMap((node) => (node.status === 'down' ? [`${node.node}: ${node.message}`] : []));
    return {
      up: false,
      quorum,
      nodes,
      message,
      error: storeUnavailable([], 'ping', `Redlock: ${message} (${failures.join('; ')})`),
    };
  }

  async close(): Promise<void> {
    this.hub.clear();
    await Promise.all(this.redlock.nodes.map((node) => node.close()));
  }

  /**
   * A quorum of listening nodes suffices: a lock is held, and so released, on a quorum, and two quorums
   * share a node. Nodes that subscribe late still deliver from then on.
   */
  protected async subscribeReleases(channel: string): Promise<void> {
    const redlock = this.redlock;
    const timeout = this.timeout(undefined);
    const round = redlock.round((node) => node.subscribe(channel, timeout));
    const verdict = await round.decide<Verdict>((answers) =>
      redlock.tally(answers.filter((answer) => answer.ok).length, answers),
    );
    if (verdict !== 'for') {
      throw redlock.unavailable([], 'watch', redlock.tooFewNodes(round.answersSoFar()), round.answersSoFar());
    }
  }

  protected async unsubscribeReleases(channel: string): Promise<void> {
    await Promise.allSettled(this.redlock.nodes.map((node) => node.unsubscribe(channel)));
  }
}

/**
 * A holder's fence from what its nodes record: the value recorded on at least a quorum of them. The grant's
 * fence F (its Lock.fence) is the highest of its granting quorum, and the fence write-back leaves F on at
 * least a quorum of nodes before the grant is returned (fence-write-back.ts): for a mutex the key's counter
 * there (nobody else increments it while the holder holds the node), for a permit or reader its own field
 * in the record. A node that granted after the quorum was in recorded what its own counter gave, which may
 * be higher than F or lower. Two values cannot both be on a quorum. When none is (a grant whose write-back is
 * still under way, or nodes of its quorum that lost the key, e.g. restarted without persistence), the grant's
 * fence cannot be told from what the nodes hold, and the largest recorded value is reported.
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
