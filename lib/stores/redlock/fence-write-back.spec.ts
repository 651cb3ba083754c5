import { FENCE_SCALE, MAX_REDLOCK_NODES, mutexFence } from './fence-scale';
import { fencesAgreed, grantFences, highestFences, type NodeGrant } from './fence-write-back';

const permit = { kind: 'semaphore', limit: 3 } as const;
const reader = { kind: 'read' } as const;

/** The fence a grant reports from the answers of its granting nodes (one key). */
function reported(grants: readonly NodeGrant[], shape: typeof permit | typeof reader = permit): number {
  return grantFences(grants, highestFences(grants), shape)[0];
}

describe('Redlock fences (fence-scale.ts, grantFences)', () => {
  it('two permits granted at the same moment with the same highest counter, from different nodes, get fences of their own', () => {
    // 3 nodes: node 0 gave A 5 and B 6, node 1 gave B 5 and A 6, node 2 gave A 4 and B 4 (each INCR once per grant).
    const a = reported([{ node: 0, fences: [5] }, { node: 1, fences: [6] }, { node: 2, fences: [4] }]);
    const b = reported([{ node: 0, fences: [6] }, { node: 1, fences: [5] }, { node: 2, fences: [4] }]);
    expect(a).not.toBe(b);
    expect([a, b]).toEqual([6 * FENCE_SCALE + 1, 6 * FENCE_SCALE + 0]);
    // Readers alike.
    expect(reported([{ node: 2, fences: [9] }], reader)).not.toBe(reported([{ node: 1, fences: [9] }], reader));
  });

  it("a permit's tie-break is the lowest node that gave the highest counter", () => {
    expect(reported([{ node: 3, fences: [7] }, { node: 1, fences: [7] }, { node: 4, fences: [2] }])).toBe(7 * FENCE_SCALE + 1);
  });

  it('a higher counter always makes a higher fence, whatever the tie-breaks and kinds', () => {
    const lastNode = MAX_REDLOCK_NODES - 1;
    const permitAtF = reported([{ node: lastNode, fences: [10] }]);
    const mutexAtF = mutexFence(10);
    const permitAbove = reported([{ node: 0, fences: [11] }]);
    expect(permitAtF).toBeLessThan(mutexAtF);
    expect(mutexAtF).toBeLessThan(permitAbove);
    expect(permitAbove).toBeLessThan(mutexFence(11));
    // A writer after readers of the same counter could not happen (readers hold the key), but would still rank above them.
    const writer = [{ node: 0, fences: [10] }];
    expect(grantFences(writer, highestFences(writer), undefined)).toEqual([mutexAtF]);
  });

  it('a mutex whose quorum agreed reports its fences at once; a permit never skips the write-back that records its fence', () => {
    const agreed: NodeGrant[] = [
      { node: 0, fences: [3, 8] },
      { node: 1, fences: [3, 8] },
      { node: 2, fences: [2, 8] },
    ];
    expect(fencesAgreed(agreed, 2, undefined)).toEqual([mutexFence(3), mutexFence(8)]);
    expect(fencesAgreed(agreed, 3, undefined)).toBeUndefined();
    expect(fencesAgreed([{ node: 0, fences: [3] }, { node: 1, fences: [3] }], 2, permit)).toBeUndefined();
  });
});
