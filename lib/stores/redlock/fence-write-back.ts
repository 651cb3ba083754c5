import { InvalidLockKeyError } from '../../errors';
import type { LockKeyNames, LockShape } from '../lock-store.interface';
import { type RedisLockNode, isPermit } from '../redis/redis-lock-node';
import { FENCE_SCALE, mutexFence } from './fence-scale';
import { QuorumRound } from './quorum-round';

/** A node that granted the lock, and the fence per key its counters gave the grant. */
export interface NodeGrant {
  readonly node: number;
  readonly fences: readonly number[];
}

/** Per key, the highest fence any of the granting nodes gave. */
export function highestFences(grants: readonly NodeGrant[]): number[] {
  const highest: number[] = [];
  for (const grant of grants) {
    grant.fences.forEach((fence, index) => (highest[index] = Math.max(highest[index] ?? 0, fence)));
  }
  return highest;
}

/**
 * The fences a grant reports, per key, from its quorum's highest counters (see FENCE_SCALE): a permit's
 * tie-break is the position of the lowest node whose own INCR gave the highest value.
 */
export function grantFences(grants: readonly NodeGrant[], highest: readonly number[], shape: LockShape | undefined): number[] {
  if (!isPermit(shape)) return highest.map(mutexFence);
  return highest.map((value, index) => {
    let node = FENCE_SCALE - 1;
    for (const grant of grants) if (grant.fences[index] === value && grant.node < node) node = grant.node;
    return value * FENCE_SCALE + node;
  });
}

/**
 * A mutex grant's fences (as its Lock reports them) when at least `quorum` of the granting nodes already gave
 * the highest ones: S is established without a write-back (see writeBackFences). undefined when a write-back
 * is needed, and always for a permit or reader, whose reported fence is recorded on the nodes by the write-back.
 */
export function fencesAgreed(grants: readonly NodeGrant[], quorum: number, shape: LockShape | undefined): number[] | undefined {
  if (isPermit(shape)) return undefined;
  const highest = highestFences(grants);
  let atHighest = 0;
  for (const grant of grants) if (reaches(grant.fences, highest)) atHighest++;
  return atHighest >= quorum ? highest.map(mutexFence) : undefined;
}

/** Whether every counter of a grant is already at `target` (counters never go down, so "at least"). */
function reaches(fences: readonly number[], target: readonly number[]): boolean {
  return target.every((value, index) => fences[index] >= value);
}

/**
 * Makes the fences of a Redlock grant strictly greater than those of every earlier grant of the same key,
 * although each node keeps its own counter and successive grants may be made by different quorums.
 *
 * The grant's counter per key is F = the maximum over the granting quorum (its Lock reports F with a
 * tie-break, see fence-scale.ts and grantFences: here "fence" is F). Before the grant is returned, a
 * set S of at least a quorum of nodes that granted it (and still hold it: the raise script checks the
 * token) must have counters >= F: nodes whose own answer was F already do, the others are raised to F with
 * a compare-and-raise script (SET only if lower). Then, for any later grant L of the key:
 *   - L's granting quorum and S, both majorities, share a node k;
 *   - k held this grant from before S was complete until after it was returned (the lease outlives the
 *     return: the store never returns a grant whose validity is over), so L's acquire script ran on k
 *     after this grant was returned, hence after k's counter was >= F;
 *   - that script's INCR on k gave L a value > F, and L's fence, a maximum that includes k's, is > F.
 * Raising nodes outside the granting quorum would not do: a later grant may have taken such a node
 * before the raise reached it, and the intersection argument needs a node it could only take afterwards.
 * Like the single-Redis fence, this holds while nodes keep their counters (no restart without persistence).
 *
 * A permit or reader (several holders, each with its fence in the record beside the set) has its reported
 * fence (see grantFences) recorded as its own by the same script on every granting node, those at F too: S is
 * then the nodes that confirmed it, and the reported fence is on at least a quorum of nodes, whereas a node
 * that granted after the quorum was in (not in `grants`) keeps whatever its own counter gave. That is how
 * inspect tells the grant's fence (the value a quorum records) from such a node's. So a permit's grant always
 * takes this round trip (a mutex's only when its nodes disagree): the price of a fence of its own.
 *
 * Resolves with the reported fences (see grantFences) once S is established; undefined when too few holders
 * confirmed (the caller gives up the grant). An InvalidLockKeyError from a node (foreign data at a fence key)
 * rejects.
 */
export async function writeBackFences(
  nodes: readonly RedisLockNode[],
  grants: readonly NodeGrant[],
  keys: readonly LockKeyNames[],
  token: string,
  quorum: number,
  timeoutMs: number,
  shape?: LockShape,
): Promise<number[] | undefined> {
  const agreed = fencesAgreed(grants, quorum, shape);
  if (agreed) return agreed;
  const highest = highestFences(grants);
  const reported = grantFences(grants, highest, shape);
  // A permit's reported fence is recorded on every granting node; a mutex's counters are raised where behind.
  const permit = isPermit(shape);
  const atHighest = permit ? 0 : grants.filter((grant) => reaches(grant.fences, highest)).length;
  const raise = permit ? grants : grants.filter((grant) => !reaches(grant.fences, highest));
  const round = new QuorumRound(raise.length, (index) =>
    nodes[raise[index].node].raiseFences(keys, token, highest, timeoutMs, shape, permit ? reported[0] : undefined),
  );
  const confirmed = await round.decide<boolean>((answers, pending) => {
    const invalid = answers.find((answer) => !answer.ok && answer.error instanceof InvalidLockKeyError);
    if (invalid && !invalid.ok) throw invalid.error;
    const raised = answers.filter((answer) => answer.ok && answer.value).length;
    if (atHighest + raised >= quorum) return true;
    if (atHighest + raised + pending < quorum) return false;
    return undefined;
  });
  return confirmed ? reported : undefined;
}
