// What a refused Redlock attempt tells its caller: when to look again, and which grants it waits for.
import { InvalidLockKeyError, LockOptionsError } from '../../errors';
import type { AcquireOutcome, LockShape } from '../lock-store.interface';
import { type NodeAcquireReply, UNNAMED_READERS } from '../redis/node-replies';
import type { NodeAnswer } from './quorum-round';
import type { RedlockNodes } from './redlock-nodes';

/** Mean delay before retrying a key whose nodes were split between contending attempts. */
const CONTENDED_RETRY_MS = 20;

/** Mean delay before retrying a semaphore whose nodes were split between attempts (or hold stale permits). */
const PERMIT_CONTENDED_RETRY_MS = 100;

/** Prefix of a reader's value among a refusal's holders: never a lease value's first character. */
const READER = '\0reader:';

/** A refused attempt, as the nodes heard answered it. */
export interface Refusal {
  /**
   * The answers heard (after the verdict, a writer refused by readers hears the other nodes out: see RedlockAttempts).
   */
  readonly heard: readonly NodeAnswer<NodeAcquireReply>[];
  /** The quorum for the lock's shape. */
  readonly quorum: number;
  readonly shape: LockShape | undefined;
  /** Whether a node recorded the writer's intent (see AcquireOutcome.queued). */
  readonly queued: boolean;
  /** The attempt's command timeout. */
  readonly timeout: number;
}

/**
 * The outcome of a refused attempt. Foreign data at a key, or a key held as another kind of lock, on a
 * majority of the nodes is the caller's to fix (key, keyPrefix, or the same limit/mode everywhere): thrown. On a
 * minority it is a leftover: a lease of the other kind being released or expiring there (a release is decided
 * on a quorum, and the last nodes apply it a moment later), so that node counts as busy for now and the
 * attempt is made again soon.
 */
export function refusedOutcome(
  redlock: RedlockNodes,
  { heard, quorum, shape, queued, timeout }: Refusal,
): AcquireOutcome {
  const busy: number[] = [];
  const holders = new Map<string, number>();
  let failed = 0;
  let granted = 0;
  const mistakes = heard.filter((answer) => !answer.ok && isCallersMistake(answer.error));
  if (mistakes.length >= redlock.quorum) throw (mistakes[0] as { error: unknown }).error;
  // Readers are counted one by one only when every node they refused on named them (one too full to name
  // them could hold any of them): otherwise "readers", unnamed, count as one holder.
  const byReader = namesReaders(heard);
  let refusedByReaders = false;
  /** Refusals by a holder other than readers (a writer, or unknown): the message then names no readers. */
  let refusedOtherwise = false;
  for (const answer of heard) {
    if (!answer.ok && isCallersMistake(answer.error)) {
      busy.push(-1);
      continue;
    }
    if (!answer.ok) failed++;
    else if (!answer.value.acquired) {
      busy.push(answer.value.retryAfter);
      // Refused by readers it names: each reader counts as a holder of this node (a partial reader grant holds
      // no quorum, and its undo is announced to nobody).
      const readers = byReader ? answer.value.readers : undefined;
      if (answer.value.readers === undefined) refusedOtherwise = true;
      if (readers) {
        refusedByReaders = true;
        for (const reader of readers) holders.set(READER + reader, (holders.get(READER + reader) ?? 0) + 1);
      } else holders.set(answer.value.holder, (holders.get(answer.value.holder) ?? 0) + 1);
    } else granted++;
  }
  if (shape?.kind === 'semaphore') {
    // Permits name no holder. Nodes split between this attempt and others (each undone, silently) or a
    // node full of permits the others lack (a holder that lost its quorum, until they expire): look
    // again soon, at a random moment. Otherwise every busy node is full: a release wakes this waiter,
    // or the earliest permit's expiry on the nodes that must free one.
    const leasesEnd = retryAfter(redlock, busy, failed, quorum);
    if (granted === 0) return { acquired: false, retryAfter: leasesEnd, queued };
    const contended = Math.ceil(PERMIT_CONTENDED_RETRY_MS * (0.5 + Math.random()));
    return { acquired: false, retryAfter: leasesEnd >= 0 ? Math.min(leasesEnd, contended) : contended, queued };
  }
  const most = Math.max(0, ...holders.values());
  if (most < redlock.quorum) {
    // No grant holds a quorum of the nodes that answered. Nodes that failed, and those not heard from yet
    // whose last command failed too (presumed down, not merely slower: a busy verdict does not wait for
    // them), may hold anything.
    // Counted by reader, every node not heard from may hold them (the answers were heard out, and a node
    // slower than that may hold what makes a quorum of readers): it then sleeps at most about a node timeout.
    let unknown = failed;
    redlock.nodes.forEach((node, index) => {
      if ((node.failing || refusedByReaders) && !heard.some((answer) => answer.node === index)) unknown++;
    });
    if (most + unknown < redlock.quorum) {
      // Nor could one with them: the key is contended by attempts that split the nodes between them and
      // are being undone (or by leases about to expire). Nobody will announce a release: try again soon,
      // at a random moment so that the contenders do not split the nodes again.
      return { acquired: false, retryAfter: Math.ceil(CONTENDED_RETRY_MS * (0.5 + Math.random())), queued };
    }
    // A holder may hold a quorum with the nodes that are down (or had one: a holder left on fewer than a
    // quorum of the live nodes cannot renew, and its leases run out at their PTTL), or it is another
    // attempt, whose partial grant lasts until the down nodes' answers are in (one node timeout as a rule;
    // about two for an attempt that first waited there behind a writer's second script).
    // Retrying every few ms would spin for as long as such leases last, and so many attempts would keep
    // splitting the live nodes between them: look again after about one node timeout, or when the leases
    // end if sooner (a release still wakes the waiters at once).
    const leasesEnd = retryAfter(redlock, busy, failed, quorum);
    const partialGrantsEnd = Math.ceil(timeout * (0.5 + Math.random()));
    return {
      acquired: false,
      retryAfter: leasesEnd >= 0 ? Math.min(leasesEnd, partialGrantsEnd) : partialGrantsEnd,
      queued,
    };
  }
  // A quorum holds the key: only a release of a grant that refused this attempt can free it for the waiter
  // (see AcquireOutcome.refusedBy), when every refusal named its grant.
  const refusedBy = mistakes.length === 0 && !holders.has('') && !refusedByReaders ? [...holders.keys()] : undefined;
  const after = retryAfter(redlock, busy, failed, quorum);
  return !refusedOtherwise && mistakes.length === 0 && busy.length > 0
    ? { acquired: false, retryAfter: after, queued, refusedBy, byReaders: true }
    : { acquired: false, retryAfter: after, queued, refusedBy };
}

/**
 * When a busy key frees up for this client: the key is granted once enough of the busy nodes' leases
 * expire for the nodes left to make a quorum. -1 when no busy node reported a time.
 */
function retryAfter(redlock: RedlockNodes, busy: readonly number[], failed: number, quorum: number): number {
  const known = busy.filter((ms) => ms >= 0).sort((a, b) => a - b);
  if (known.length === 0) return -1;
  const canStayBusy = Math.max(0, redlock.count - failed - quorum);
  const mustExpire = Math.min(known.length, Math.max(1, busy.length - canStayBusy));
  return Math.max(1, known[mustExpire - 1]);
}

/** Whether a reader, or another holder, is named by a quorum of the refusals (see namesReaders). */
export function readersHoldQuorum(answers: readonly NodeAnswer<NodeAcquireReply>[], quorum: number): boolean {
  const counts = new Map<string, number>();
  for (const answer of answers) {
    if (!answer.ok || answer.value.acquired) continue;
    for (const holder of answer.value.readers ?? [answer.value.holder]) {
      const count = (counts.get(holder) ?? 0) + 1;
      if (count >= quorum) return true;
      counts.set(holder, count);
    }
  }
  return false;
}

/**
 * Whether a writer was refused by readers that every such node named (WRITE_ACQUIRE_SCRIPT names up to 32): only
 * then can the store tell readers that hold a quorum from partial grants. False at once for any other refusal.
 */
export function namesReaders(answers: readonly NodeAnswer<NodeAcquireReply>[]): boolean {
  let named = false;
  for (const answer of answers) {
    if (!answer.ok || answer.value.acquired || answer.value.readers === undefined) continue;
    if (answer.value.readers === UNNAMED_READERS) return false;
    named = true;
  }
  return named;
}

/**
 * A node's refusal that is the caller's to fix, not the node's failure: foreign data, or a key held as another kind.
 */
export function isCallersMistake(error: unknown): boolean {
  return error instanceof InvalidLockKeyError || error instanceof LockOptionsError;
}
