/**
 * The events of the semaphore / read-write history checker, as the workers push them to the data Redis
 * (./primitives-history-worker.ts) and the checker reads them (../support/primitives-history.ts). Kept apart
 * from the worker because the worker file runs its scenario when loaded.
 */

/** What a holder was: one permit of a semaphore, or a reader or a writer of a read-write lock. */
export type HolderKind = 'permit' | 'read' | 'write';

/** The list of events of a lock key on the data Redis. */
export function eventsKey(lockKey: string): string {
  return `${lockKey}:events`;
}

/** The counter of holders of `kind` inside, and the highest value it reached. */
export function insideKeys(lockKey: string, kind: HolderKind): { readonly inside: string; readonly max: string } {
  return { inside: `${lockKey}:inside:${kind}`, max: `${lockKey}:max:${kind}` };
}

export type HistoryEvent =
  | { readonly type: 'call'; readonly attempt: string }
  | { readonly type: 'enter'; readonly attempt: string; readonly kind: HolderKind; readonly fence: number }
  | { readonly type: 'exit'; readonly attempt: string; readonly kind: HolderKind };

export function callEvent(attempt: string): string {
  return `call ${attempt}`;
}

export function enterEvent(attempt: string, kind: HolderKind, fence: number): string {
  return `enter ${attempt} ${kind} ${fence}`;
}

export function exitEvent(attempt: string, kind: HolderKind): string {
  return `exit ${attempt} ${kind}`;
}

export function parseEvent(text: string): HistoryEvent {
  const [type, attempt, kind, fence] = text.split(' ');
  if (type === 'call' && attempt) return { type, attempt };
  if (type === 'enter' && isKind(kind) && fence !== undefined) return { type, attempt, kind, fence: Number(fence) };
  if (type === 'exit' && isKind(kind)) return { type, attempt, kind };
  throw new Error(`not a history event: "${text}"`);
}

function isKind(kind: string | undefined): kind is HolderKind {
  return kind === 'permit' || kind === 'read' || kind === 'write';
}
