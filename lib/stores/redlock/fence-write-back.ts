// Redlock's fence write-back: a grant's fences strictly above every earlier grant's, whichever quorum made them.
import { InvalidLockKeyError } from '../../errors';
import type { LockKeyNames, LockShape } from '../lock-store.interface';
import type { RedisLockNode } from '../redis/redis-lock-node';
import { QuorumRound } from './quorum-round';

/**
 * A node that granted the lock, the fence per key its counters gave the grant, and per key how far its counter
 * is now when that is further (a permit's or reader's block, see PERMIT_ACQUIRE_SCRIPT; else the fence).
 */
export interface NodeGrant {
  readonly node: number;
  readonly fences: readonly number[];
  readonly reaches?: readonly number[];
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
 * The grant's fences when the counters of at least `quorum` of the granting nodes already reach the highest
 * ones (they gave them, or, for a permit's block, went past them: see PERMIT_ACQUIRE_SCRIPT): S is established
 * without a write-back (see writeBackFences). undefined when a write-back is needed.
 */
export function fencesAgreed(grants: readonly NodeGrant[], quorum: number): number[] | undefined {
  const highest = highestFences(grants);
  let atHighest = 0;
  for (const grant of grants) if (reaches(grant, highest)) atHighest++;
  return atHighest >= quorum ? highest : undefined;
}

/** Whether every counter of a grant's node is already at `target` (counters never go down, so "at least"). */
function reaches(grant: NodeGrant, target: readonly number[]): boolean {
  const counters = grant.reaches ?? grant.fences;
  return target.every((value, index) => counters[index] >= value);
}

/**
 * Makes the fences of a Redlock grant strictly greater than those of every earlier grant of the same key,
 * although each node keeps its own counter and successive grants may be made by different quorums.
 *
 * The grant's fence per key is F = the maximum over the granting quorum. Before the grant is returned, a
 * set S of at least a quorum of nodes that granted it (and still hold it: the raise script checks the
 * token) must have counters >= F: nodes whose counter already reaches F (its own answer was F, or a permit's
 * block went past it) do, the others are raised to F with a compare-and-raise script (SET only if lower).
 * Then, for any later grant L of the key:
 *   - L's granting quorum and S, both majorities, share a node k;
 *   - k held this grant from before S was complete until after it was returned (the lease outlives the
 *     return: the store never returns a grant whose validity is over), so L's acquire script ran on k
 *     after this grant was returned, hence after k's counter was >= F;
 *   - that script gave L a value above k's counter, so > F (NEXT_FENCE: above the counter), and
 *     L's fence, a maximum that includes k's, is > F.
 * (For permits or readers, k may admit L while it still holds this grant; what the argument needs is that L's
 * script ran on k after S was complete, which holds for any L asked for after this grant was returned. Grants
 * made at the same moment are not ordered, only distinct: see PERMIT_ACQUIRE_SCRIPT.)
 * Raising nodes outside the granting quorum would not do: a later grant may have taken such a node
 * before the raise reached it, and the intersection argument needs a node it could only take afterwards.
 * This needs no clock while nodes keep their counters. When k lost its counter (restarted empty, or failed over
 * to a replica that had not received the raise), k's value is still at least the floor of L's round (L's caller's clock
 * in µs: NEXT_FENCE), above F when that clock is not behind the ones that gave F by more than the time between the two
 * grants: the clock assumption of docs/design.md, "Fences across data loss". A round sends every node the same floor
 * (RedlockAttempts.attempt), so nodes whose counters agree give one value (for permits, the same block: each node's
 * value in it differs by stride, and every counter reaches its end) and the write-back runs only after they diverged
 * (a node that missed grants, or restarted).
 *
 * A permit or reader (several holders, each with its fence in the record beside the set) also has F recorded
 * as its own fence on the nodes raised. The other nodes that granted it recorded what their own counter gave
 * (F on one of them: by stride, the others' values differ); the store records F there after the grant without
 * waiting (RedlockLockStore.recordPermitFence), so that inspect finds the grant's fence on a quorum.
 *
 * Resolves with F once S is established; undefined when too few holders confirmed (the caller gives up the
 * grant). An InvalidLockKeyError from a node (foreign data at a fence key) rejects.
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
  const agreed = fencesAgreed(grants, quorum);
  if (agreed) return agreed;
  const highest = highestFences(grants);
  const atHighest = grants.filter((grant) => reaches(grant, highest)).length;

  const behind = grants.filter((grant) => !reaches(grant, highest));
  const round = new QuorumRound(behind.length, (index) =>
    nodes[behind[index].node].raiseFences(keys, token, highest, timeoutMs, shape),
  );
  const confirmed = await round.decide<boolean>((answers, pending) => {
    const invalid = answers.find((answer) => !answer.ok && answer.error instanceof InvalidLockKeyError);
    if (invalid && !invalid.ok) throw invalid.error;
    const raised = answers.filter((answer) => answer.ok && answer.value).length;
    if (atHighest + raised >= quorum) return true;
    if (atHighest + raised + pending < quorum) return false;
    return undefined;
  });
  return confirmed ? highest : undefined;
}
