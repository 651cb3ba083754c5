// The Redlock store's nodes and their quorum: a round over them, and how its answers become a verdict.
import type { LockUnavailableError } from '../../errors';
import type { MinReplicas, RedlockNode } from '../../options/lock-options.interface';
import type { LockKeyNames, LockShape } from '../lock-store.interface';
import { RedisLockNode } from '../redis/redis-lock-node';
import { storeUnavailable } from '../shared/store-unavailable';
import { type NodeAnswer, QuorumRound, quorumOf, semaphoreQuorumOf } from './quorum-round';
import { TokenOrder } from './token-order';

/** How a round of votes ended. */
export type Verdict = 'for' | 'against' | 'unavailable';

/**
 * The N independent Redis masters of a Redlock store, each a RedisLockNode with its own token order, and
 * the majority that makes a quorum of them.
 */
export class RedlockNodes {
  readonly nodes: readonly RedisLockNode[];
  /** floor(N/2)+1: any two quorums share a node. */
  readonly quorum: number;

  constructor(connections: readonly RedlockNode[], minReplicas: MinReplicas | undefined) {
    if (connections.length === 0) throw new RangeError('Redlock needs at least one node');
    // Permit fences by stride (see PERMIT_ACQUIRE_SCRIPT): every node hands out values no other node does.
    const step = connections.length;
    this.nodes = connections.map(
      (connection, index) =>
        new RedisLockNode(connection, {
          label: `nodes[${index}]`,
          minReplicas,
          order: new TokenOrder(),
          permitFenceStride: step > 1 ? { step, residue: index } : undefined,
        }),
    );
    this.quorum = quorumOf(this.nodes.length);
  }

  get count(): number {
    return this.nodes.length;
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

  /** Sends to every node at once (see QuorumRound). */
  round<T>(send: (node: RedisLockNode) => Promise<T>): QuorumRound<T> {
    return new QuorumRound(this.nodes.length, (index) => send(this.nodes[index]));
  }

  /** Sends to every node and waits for all answers (each node command is bounded by its timeout). */
  async everyNode<T>(send: (node: RedisLockNode) => Promise<T>): Promise<readonly NodeAnswer<T>[]> {
    const round = this.round(send);
    await round.decide((_answers, pending) => (pending === 0 ? true : undefined));
    return round.answersSoFar();
  }

  /** Yes/no votes: `yes` on a quorum is 'for'; too many failures 'unavailable'; a quorum out of reach 'against'. */
  tally(yes: number, answers: readonly NodeAnswer<unknown>[], quorum = this.quorum): Verdict | undefined {
    let failed = 0;
    for (const answer of answers) if (!answer.ok) failed++;
    return this.verdict(yes, failed, answers.length, quorum);
  }

  /**
   * 'for' on a quorum of yes; 'unavailable' when more nodes failed than can be spared; 'against' (busy)
   * once the refusals alone leave no quorum, or once every node has answered without a quorum. Until then
   * a node still to answer could fail and make it 'unavailable': an unreachable store is never "busy".
   */
  verdict(yes: number, failed: number, answered: number, quorum: number): Verdict | undefined {
    const spare = this.nodes.length - quorum;
    if (yes >= quorum) return 'for';
    if (failed > spare) return 'unavailable';
    const refused = answered - yes - failed;
    if (refused > spare || answered === this.nodes.length) return 'against';
    return undefined;
  }

  tooFewNodes(answers: readonly NodeAnswer<unknown>[], quorum = this.quorum): string {
    const answered = answers.filter((answer) => answer.ok).length;
    return `only ${answered} of ${this.nodes.length} Redlock nodes answered, a quorum is ${quorum}`;
  }

  /** A LockUnavailableError for `operation`, naming each node that failed and why. */
  unavailable(
    keys: readonly LockKeyNames[],
    operation: string,
    detail: string,
    answers: readonly NodeAnswer<unknown>[],
  ): LockUnavailableError {
    const failures = answers.flatMap((answer) =>
      answer.ok ? [] : [`${this.nodes[answer.node].label}: ${this.nodes[answer.node].describeFailure(answer.error)}`],
    );
    const cause = answers.find((answer) => !answer.ok);
    const where = `Redlock: ${detail}${failures.length > 0 ? ` (${failures.join('; ')})` : ''}`;
    return storeUnavailable(keys, operation, where, cause && !cause.ok ? { cause: cause.error } : undefined);
  }
}
