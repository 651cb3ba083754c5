/**
 * A Redlock grant's fence is F x FENCE_SCALE + a tie-break, F being the highest counter of its quorum (see
 * writeBackFences). Two permits (or readers) granted at the same moment can both take the same F, each from
 * another node's counter (before, they then shared a fence: review finding P1). A node's INCR gives a value to
 * one grant only, so F and the position of the node whose INCR gave it name one grant: a permit's tie-break is
 * that position (the lowest, when several nodes gave F). A mutex (or writer) is never granted beside another
 * holder, so it needs no tie-break of a node, and takes FENCE_SCALE - 1, above every permit's of the same F.
 * Order is kept: a grant asked for after another was returned has a higher F (see writeBackFences), so a
 * higher fence whatever the tie-breaks. A fixed scale, not the number of nodes: fences stay increasing
 * when nodes are added or removed. The position is the node's in `nodes`: processes that list the same nodes
 * in another order could give two concurrent permits one fence again (never a fence out of order).
 */
export const FENCE_SCALE = 64;

/** The most nodes a Redlock store takes: positions 0-62 are permits' tie-breaks, 63 is a mutex's. */
export const MAX_REDLOCK_NODES = FENCE_SCALE - 1;

/** The fence a Lock reports for a mutex (or writer) whose quorum's highest counter was `highest`. */
export function mutexFence(highest: number): number {
  return highest * FENCE_SCALE + (FENCE_SCALE - 1);
}
