/**
 * The history checker for semaphores and read-write locks (see ../primitives-history.spec.ts).
 *
 * The workers of several processes write one list per lock key on a Redis of its own, in the order that
 * Redis ran the pushes (no clocks): `call <attempt>` just before asking for the lock, `enter <attempt> <kind>
 * <fence>` once it is held (nothing of the critical section before), `exit <attempt> <kind>` before it is
 * released (nothing of the critical section after). Each recorded stay lies inside the real one, so a lock
 * that keeps its promise leaves a list that keeps it too, and any overlap the list shows really happened.
 * An attempt is `<process>.<worker>.<cycle>`; the events' text is ../children/primitives-history-events.ts.
 */
import { type HolderKind, parseEvent } from '../children/primitives-history-events';

/** What one key's history shows. Every count named as a violation is 0 when the lock kept its promise. */
export interface PrimitivesVerdict {
  /** Critical sections entered. */
  readonly grants: number;
  /** Critical sections entered, per process. */
  readonly grantsByProcess: Readonly<Record<string, number>>;
  /** The most holders inside at once (permits, or readers plus writers). */
  readonly maxInside: number;
  /** The most readers inside at once (read-write keys). */
  readonly maxReaders: number;
  /** The most writers inside at once (read-write keys). */
  readonly maxWriters: number;
  /** Grants made while a holder of another process was inside: the processes really shared the key. */
  readonly crossProcessOverlaps: number;
  /** Violation: entries that brought the holders inside above the semaphore's limit. */
  readonly overLimit: number;
  /** Violation: entries of a writer beside anyone, or of anyone beside a writer. */
  readonly writerOverlaps: number;
  /**
   * Violation: grants whose fence is not greater than a fence granted before they were asked for (an
   * `enter` earlier in the list than their `call`).
   */
  readonly fenceInversions: number;
  /**
   * Violation: grants whose fence another grant of the key had too. Each permit is a lock with its own fence
   * and fences that rise in grant order are all different, whatever order the grants are in.
   */
  readonly repeatedFences: number;
  /** Violation: an enter without its call, an exit without its enter, an attempt entered twice, one never left. */
  readonly malformed: number;
  readonly violations: number;
  /** The first few violations, described (for the failure message and the log). */
  readonly examples: readonly string[];
}

/** The rule a key's holders must keep: at most `limit` permits, or readers together / a writer alone. */
export type HistoryRule = { readonly limit: number } | 'read-write';

/** Replays one key's events in list order and counts what broke `rule`. */
export function checkPrimitivesHistory(entries: readonly string[], rule: HistoryRule): PrimitivesVerdict {
  const inside = new Map<string, HolderKind>();
  const called = new Map<string, number>();
  const entered = new Set<string>();
  const grantsByProcess: Record<string, number> = {};
  let greatestGrantedFence = -Infinity;
  let grants = 0;
  let maxInside = 0;
  let maxReaders = 0;
  let maxWriters = 0;
  let crossProcessOverlaps = 0;
  let overLimit = 0;
  let writerOverlaps = 0;
  let fenceInversions = 0;
  let repeatedFences = 0;
  let malformed = 0;
  const examples: string[] = [];
  const note = (what: string): void => {
    if (examples.length < 5) examples.push(what);
  };
  const grantedFence = new Map<number, string>();

  const count = (kind: HolderKind): number => [...inside.values()].filter((holder) => holder === kind).length;
  const processOf = (attempt: string): string => attempt.split('.')[0];

  for (const text of entries) {
    const event = parseEvent(text);
    if (event.type === 'call') {
      if (called.has(event.attempt)) malformed++;
      called.set(event.attempt, greatestGrantedFence);
      continue;
    }
    if (event.type === 'exit') {
      if (inside.get(event.attempt) !== event.kind) {
        malformed++;
        note(`${event.attempt} left without being inside`);
      }
      inside.delete(event.attempt);
      continue;
    }
    // enter
    const greatestBeforeCall = called.get(event.attempt);
    if (greatestBeforeCall === undefined || entered.has(event.attempt)) {
      malformed++;
      note(`${event.attempt} entered without being called, or twice`);
    } else if (!(event.fence > greatestBeforeCall)) {
      fenceInversions++;
      note(
        `${event.attempt} (${event.kind}) got fence ${event.fence}, asked after fence ${greatestBeforeCall} was granted`,
      );
    }
    const sameFence = grantedFence.get(event.fence);
    if (sameFence !== undefined) {
      repeatedFences++;
      note(
        `${event.attempt} (${event.kind}) got fence ${event.fence}, already granted to ${sameFence}${inside.has(sameFence) ? ' (still inside)' : ''}`,
      );
    }
    grantedFence.set(event.fence, event.attempt);
    greatestGrantedFence = Math.max(greatestGrantedFence, event.fence);
    entered.add(event.attempt);
    grants++;
    const process = processOf(event.attempt);
    grantsByProcess[process] = (grantsByProcess[process] ?? 0) + 1;
    if ([...inside.keys()].some((other) => processOf(other) !== process)) crossProcessOverlaps++;
    if (rule === 'read-write') {
      if (event.kind === 'permit') malformed++;
      if (event.kind === 'write' ? inside.size > 0 : count('write') > 0) {
        writerOverlaps++;
        note(
          `${event.attempt} (${event.kind}) entered beside ${[...inside].map(([attempt, kind]) => `${attempt} (${kind})`).join(', ')}`,
        );
      }
    } else if (event.kind !== 'permit') malformed++;
    inside.set(event.attempt, event.kind);
    if (rule !== 'read-write' && inside.size > rule.limit) {
      overLimit++;
      note(`${event.attempt} entered as holder ${inside.size} of ${rule.limit}`);
    }
    maxInside = Math.max(maxInside, inside.size);
    maxReaders = Math.max(maxReaders, count('read'));
    maxWriters = Math.max(maxWriters, count('write'));
  }
  for (const attempt of inside.keys()) note(`${attempt} never left`);
  malformed += inside.size;
  return {
    grants,
    grantsByProcess,
    maxInside,
    maxReaders,
    maxWriters,
    crossProcessOverlaps,
    overLimit,
    writerOverlaps,
    fenceInversions,
    repeatedFences,
    malformed,
    violations: overLimit + writerOverlaps + fenceInversions + repeatedFences + malformed,
    examples,
  };
}
