import type { RedlockLockStore } from '../../lib/stores/redlock/redlock-lock.store';
import {
  eventually,
  freshLock,
  freshToken,
  redlockStore,
  type RedlockNodes,
  startRedlockNodes,
  valuesOn,
} from './helpers/redlock-nodes';

const NODES = 5;
const QUORUM = 3;
const TTL_MS = 10_000;
const FOREIGN = 'other-token';

/** Every subset of the node indexes 0..n-1. */
function subsets(n: number): number[][] {
  return Array.from({ length: 2 ** n }, (_, mask) => [...Array(n).keys()].filter((node) => mask & (1 << node)));
}

/**
 * In the style of go-redsync's tests: for every combination of nodes on which another client already holds
 * the key, one attempt succeeds exactly when fewer than a quorum are taken, never touches the other
 * client's leases, and leaves no key of its own behind when it fails.
 */
describe('Redlock quorum over 5 real Redis nodes, exhaustively', () => {
  let nodes: RedlockNodes;
  let store: RedlockLockStore;
  beforeAll(async () => {
    nodes = await startRedlockNodes(NODES);
    store = redlockStore(nodes.option);
  });
  afterAll(async () => {
    await store?.close();
    await nodes?.stop();
  });

  /** Waits (briefly) until `token` is on no node at any of `lockKeys`: a failed attempt's undo has landed. */
  async function settled(token: string, lockKeys: readonly string[]): Promise<void> {
    const anywhere = async (): Promise<boolean> =>
      (await Promise.all(lockKeys.map((lockKey) => valuesOn(nodes, lockKey)))).flat().includes(token);
    const deadline = performance.now() + 1_000;
    while ((await anywhere()) && performance.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 5));
  }

  it('for each of the 32 subsets of nodes pre-holding the key: granted iff fewer than 3 are held; a failure leaves no key', async () => {
    const outcomes: string[] = [];
    const expected: string[] = [];
    for (const held of subsets(NODES)) {
      const lock = freshLock(`subset-${held.join('')}`);
      await Promise.all(held.map((node) => nodes.inspectors[node].set(lock.lockKey, FOREIGN, 'PX', TTL_MS)));
      const token = freshToken();

      const outcome = await store.acquire({ keys: [lock], token, ttl: TTL_MS });
      // A busy verdict does not wait for the nodes still answering: their undo is queued right behind the
      // attempt on the same connection, and lands as soon as they answer.
      if (!outcome.acquired) await settled(token, [lock.lockKey]);
      const values = await valuesOn(nodes, lock.lockKey);
      const ours = values.filter((value) => value === token).length;
      const on = held.join(',');
      outcomes.push(
        `held on [${on}]: ${outcome.acquired ? 'granted' : 'busy'}, ours on ${outcome.acquired ? 'a quorum' : ours}`,
      );
      expected.push(
        `held on [${on}]: ${held.length < QUORUM ? 'granted' : 'busy'}, ours on ${held.length < QUORUM ? 'a quorum' : 0}`,
      );

      // The other client's leases are never touched.
      expect(held.map((node) => values[node])).toEqual(held.map(() => FOREIGN));
      if (outcome.acquired) {
        expect(ours).toBeGreaterThanOrEqual(QUORUM);
        expect(outcome.fences).toHaveLength(1);
        expect(outcome.validUntil).toBeGreaterThan(performance.now());
        await expect(store.release([lock], token)).resolves.toBe(true);
        await eventually(
          async () => !(await valuesOn(nodes, lock.lockKey)).includes(token),
          1000,
          'released everywhere',
        );
      } else {
        // Busy, not unavailable: every node answered. The wait hint is a held lease's remaining time.
        expect(outcome.retryAfter).toBeGreaterThan(0);
        expect(outcome.retryAfter).toBeLessThanOrEqual(TTL_MS);
      }
    }
    expect(outcomes).toEqual(expected);
  });

  it('multi-key, all or none: for each of the 243 ways to hold key A, key B or neither per node, granted iff fewer than 3 nodes hold one', async () => {
    const mismatches: string[] = [];
    for (let combination = 0; combination < 3 ** NODES; combination++) {
      // Node i holds nothing (0), key A (1) or key B (2): the base-3 digits of `combination`.
      const holding = [...Array(NODES).keys()].map((node) => Math.floor(combination / 3 ** node) % 3);
      const a = freshLock('multi-a');
      const b = freshLock('multi-b');
      await Promise.all(
        holding.map((what, node) =>
          what === 0 ? undefined : nodes.inspectors[node].set((what === 1 ? a : b).lockKey, FOREIGN, 'PX', TTL_MS),
        ),
      );
      const token = freshToken();
      const outcome = await store.acquire({ keys: [a, b], token, ttl: TTL_MS });
      if (!outcome.acquired) await settled(token, [a.lockKey, b.lockKey]);
      const busyNodes = holding.filter((what) => what !== 0).length;
      const [valuesA, valuesB] = await Promise.all([valuesOn(nodes, a.lockKey), valuesOn(nodes, b.lockKey)]);
      // On every node: both keys ours, or neither (a node never keeps half of a multi-key lock).
      const halfHeld = holding.filter((_, node) => (valuesA[node] === token) !== (valuesB[node] === token));
      const oursAnywhere = [...valuesA, ...valuesB].includes(token);
      if (outcome.acquired !== busyNodes < QUORUM || halfHeld.length > 0 || (!outcome.acquired && oursAnywhere)) {
        const [shownA, shownB] = [valuesA.join(','), valuesB.join(',')];
        mismatches.push(`holding ${holding.join('')}: acquired=${outcome.acquired}, A=${shownA}, B=${shownB}`);
      }
      if (outcome.acquired) {
        expect(outcome.fences).toHaveLength(2);
        await store.release([a, b], token);
      }
    }
    expect(mismatches).toEqual([]);
  });

  it('foreign data at a lock key: tolerated on a minority of nodes, an InvalidLockKeyError once it keeps a quorum away', async () => {
    const minority = freshLock('foreign-minority');
    await nodes.inspectors[2].hset(minority.lockKey, 'field', 'value');
    const token = freshToken();
    const outcome = await store.acquire({ keys: [minority], token, ttl: TTL_MS });
    expect(outcome.acquired).toBe(true);
    await expect(nodes.inspectors[2].hget(minority.lockKey, 'field')).resolves.toBe('value');
    await store.release([minority], token);

    const majority = freshLock('foreign-majority');
    await Promise.all([0, 2, 4].map((node) => nodes.inspectors[node].hset(majority.lockKey, 'field', 'value')));
    await expect(store.acquire({ keys: [majority], token: freshToken(), ttl: TTL_MS })).rejects.toMatchObject({
      name: 'InvalidLockKeyError',
      key: majority.name,
    });
    // The two nodes that granted are undone: awaited where they had answered, queued behind the attempt
    // where they had not (the verdict does not wait for them).
    await eventually(
      async () =>
        (await Promise.all([1, 3].map((node) => nodes.inspectors[node].get(majority.lockKey)))).every(
          (value) => value === null,
        ),
      1_000,
      'the granting nodes undone',
    );
  });
});
