// Spec: a quorum round decides as soon as its rule can, and the quorum sizes of mutexes and semaphores.
import { QuorumRound, quorumOf, semaphoreQuorumOf } from './quorum-round';

/** A promise settled from outside: one per node, so a test decides when each node answers. */
function deferred<T>(): { promise: Promise<T>; resolve(value: T): void; reject(error: unknown): void } {
  let resolve!: (value: T) => void;
  let reject!: (error: unknown) => void;
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

const yesOnQuorum = (quorum: number) => (answers: readonly { ok: boolean; value?: unknown }[], pending: number) => {
  const yes = answers.filter((answer) => answer.ok && answer.value === true).length;
  if (yes >= quorum) return 'for';
  if (yes + pending < quorum) return 'against';
  return undefined;
};

describe('QuorumRound', () => {
  it('quorumOf is a strict majority', () => {
    expect([1, 2, 3, 4, 5, 6, 7].map(quorumOf)).toEqual([1, 2, 2, 3, 3, 4, 4]);
  });

  it('decides as soon as a quorum answered, without waiting for the silent nodes', async () => {
    const nodes = [
      deferred<boolean>(),
      deferred<boolean>(),
      deferred<boolean>(),
      deferred<boolean>(),
      deferred<boolean>(),
    ];
    const round = new QuorumRound(5, (node) => nodes[node].promise);
    const decision = round.decide(yesOnQuorum(3));
    nodes[4].resolve(true);
    nodes[1].resolve(true);
    nodes[2].resolve(true);
    // Nodes 0 and 3 never answer.
    await expect(decision).resolves.toBe('for');
    expect(round.answersSoFar().map((answer) => answer.node)).toEqual([4, 1, 2]);
  });

  it('decides against once a quorum is out of reach; a thrown send counts as that node failing', async () => {
    const nodes = [deferred<boolean>(), deferred<boolean>(), deferred<boolean>()];
    const round = new QuorumRound(3, (node) => {
      if (node === 0) throw new Error('no connection');
      return nodes[node].promise;
    });
    const decision = round.decide(yesOnQuorum(2));
    nodes[1].reject(new Error('timed out'));
    await expect(decision).resolves.toBe('against');
    expect(round.answersSoFar().map((answer) => answer.ok)).toEqual([false, false]);
  });

  it('sees the answers of one tick together: the rule, not their arrival order, decides between them', async () => {
    // A semaphore that needs every node: one node full and one node down in the same tick is "unavailable"
    // (a store that cannot answer), never "against" (an ordinary busy), whichever came first.
    const nodes = [deferred<boolean>(), deferred<boolean>(), deferred<boolean>()];
    const round = new QuorumRound(3, (node) => nodes[node].promise);
    const decision = round.decide((answers) => {
      if (answers.some((answer) => !answer.ok)) return 'unavailable';
      if (answers.some((answer) => answer.ok && answer.value === false)) return 'against';
      return answers.length === 3 ? 'for' : undefined;
    });
    nodes[0].resolve(false);
    nodes[1].reject(new Error('connection reset'));
    await expect(decision).resolves.toBe('unavailable');
  });

  it('rejects when the rule throws, and when it makes no decision after every node answered', async () => {
    const throwing = new QuorumRound(1, async () => true);
    await expect(
      throwing.decide(() => {
        throw new RangeError('foreign data');
      }),
    ).rejects.toBeInstanceOf(RangeError);
    const undecided = new QuorumRound(2, async () => true);
    await expect(undecided.decide(() => undefined)).rejects.toThrow(/no decision/);
  });
});

describe('semaphoreQuorumOf', () => {
  it(
    'is the majority for limit 1 and grows with the limit: ' +
      '3 nodes need all 3 from limit 2, 5 nodes need 4 for limit 2-3',
    () => {
      expect([1, 2, 3, 10].map((limit) => semaphoreQuorumOf(3, limit))).toEqual([2, 3, 3, 3]);
      expect([1, 2, 3, 4, 10].map((limit) => semaphoreQuorumOf(5, limit))).toEqual([3, 4, 4, 5, 5]);
      expect(semaphoreQuorumOf(1, 5)).toBe(1);
    },
  );

  it(
    'admits at most `limit` holders however permits are spread: ' +
      'N nodes x limit slots cannot fit limit + 1 holders of q nodes',
    () => {
      for (let nodes = 1; nodes <= 9; nodes++) {
        for (let limit = 1; limit <= 12; limit++) {
          const quorum = semaphoreQuorumOf(nodes, limit);
          // Pigeonhole: holders x quorum slots must fit in nodes x limit slots.
          expect(Math.floor((nodes * limit) / quorum)).toBeLessThanOrEqual(limit);
          // And the majority alone would not do, from limit 2 on 3 nodes: 3 x 2 / 2 = 3 holders of limit 2.
          if (nodes === 3 && limit === 2) expect(Math.floor((nodes * limit) / quorumOf(nodes))).toBe(3);
          expect(quorum).toBeGreaterThanOrEqual(quorumOf(nodes));
          expect(quorum).toBeLessThanOrEqual(nodes);
        }
      }
    },
  );
});
