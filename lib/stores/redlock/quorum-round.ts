// One command sent to every Redlock node at once, decided as soon as enough of them answered; the quorum sizes.
/** The majority of `nodeCount` nodes: any two quorums share at least one node. */
export function quorumOf(nodeCount: number): number {
  return Math.floor(nodeCount / 2) + 1;
}

/**
 * How many of `nodeCount` nodes must hold a permit of a semaphore of `limit`: each node admits `limit`
 * holders, so holders on q nodes each number at most floor(N·limit/q); q = floor(N·limit/(limit+1)) + 1
 * keeps that at `limit`. It is the majority for limit 1, N for limit ≥ N − 1 (3 nodes, limit 2 or more:
 * every node), and never below the majority (any two grants share a node, which the fences need).
 */
export function semaphoreQuorumOf(nodeCount: number, limit: number): number {
  return Math.max(quorumOf(nodeCount), Math.floor((nodeCount * limit) / (limit + 1)) + 1);
}

/** One node's answer in a round: its reply, or the error it failed with (a timeout included). */
export type NodeAnswer<T> =
  | { readonly node: number; readonly ok: true; readonly value: T }
  | { readonly node: number; readonly ok: false; readonly error: unknown };

/**
 * Decides a round from the answers so far (in arrival order) and how many nodes have not answered yet:
 * a decision, or undefined to wait for the next answer. Must decide once `pending` is 0.
 */
export type QuorumRule<T, D> = (answers: readonly NodeAnswer<T>[], pending: number) => D | undefined;

/**
 * One command sent to every node at once (each connection multiplexes it with other traffic), whose
 * outcome is decided as soon as enough nodes have answered: a quorum for, or so many against that a quorum
 * is impossible. Slow or paused nodes are not waited for once the outcome is known. Every node's command
 * must settle on its own (the nodes bound each command with a timeout), so a round always ends.
 */
export class QuorumRound<T> {
  private readonly arrived: NodeAnswer<T>[] = [];
  /**
   * The pending decide() calls' evaluations (no promise per answer and call). Run once per batch of answers,
   * a microtask after the first of them is recorded: answers of one tick are all seen together, so a rule's
   * own priority decides between them (e.g. "unavailable" over "against"), not their order of arrival.
   */
  private readonly onAnswer: (() => void)[] = [];
  private evaluationQueued = false;
  /** Per node: settles with that node's answer. */
  readonly answers: readonly Promise<NodeAnswer<T>>[];

  constructor(nodeCount: number, send: (node: number) => Promise<T>) {
    const answers: Promise<NodeAnswer<T>>[] = [];
    for (let node = 0; node < nodeCount; node++) {
      let sent: Promise<T>;
      try {
        sent = send(node);
      } catch (error) {
        sent = Promise.reject(error);
      }
      answers.push(
        sent.then(
          (value): NodeAnswer<T> => this.record({ node, ok: true, value }),
          (error: unknown): NodeAnswer<T> => this.record({ node, ok: false, error }),
        ),
      );
    }
    this.answers = answers;
  }

  get nodeCount(): number {
    return this.answers.length;
  }

  /** The answers received so far, in arrival order. */
  answersSoFar(): readonly NodeAnswer<T>[] {
    return [...this.arrived];
  }

  /** Resolves with the first decision `rule` makes, re-evaluated on every answer. */
  decide<D>(rule: QuorumRule<T, D>): Promise<D> {
    return new Promise<D>((resolve, reject) => {
      let decided = false;
      const evaluate = (): void => {
        if (decided) return;
        const pending = this.nodeCount - this.arrived.length;
        let decision: D | undefined;
        try {
          decision = rule(this.arrived, pending);
        } catch (error) {
          decided = true;
          reject(error);
          return;
        }
        if (decision !== undefined) {
          decided = true;
          resolve(decision);
        } else if (pending === 0) {
          decided = true;
          reject(new Error('quorum rule made no decision after every node answered'));
        }
      };
      evaluate();
      if (!decided) this.onAnswer.push(evaluate);
    });
  }

  private record(answer: NodeAnswer<T>): NodeAnswer<T> {
    this.arrived.push(answer);
    if (!this.evaluationQueued && this.onAnswer.length > 0) {
      this.evaluationQueued = true;
      queueMicrotask(() => {
        this.evaluationQueued = false;
        for (const evaluate of this.onAnswer) evaluate();
      });
    }
    return answer;
  }
}
