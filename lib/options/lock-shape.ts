// What a lock call holds: a mutex, a permit of a semaphore, or a read lock; and how errors name it.

/**
 * What an acquisition asks to hold (AcquireOptions `limit` / `mode`). A mutex is also the writer of a
 * read-write lock (`mode: 'write'` is the default); a permit of a semaphore and a reader are "permits":
 * one of several holders of the key, each with its own token, expiry and fence.
 */
export type LockShape =
  { readonly kind: 'mutex' } | { readonly kind: 'semaphore'; readonly limit: number } | { readonly kind: 'read' };

/** The shape of a call without `limit` or `mode`. */
export const MUTEX: LockShape = Object.freeze({ kind: 'mutex' });

/**
 * How an options error names the `limit` of a call that gave none (a mutex): not "undefined", but what it asked for.
 */
export const MUTEX_WANTED = 'not set (a mutex)';

/** A shape in words, for error messages. */
export function describeShape(shape: LockShape | undefined): string {
  if (!shape || shape.kind === 'mutex') return 'a mutex (or the write lock of a read-write lock)';
  return shape.kind === 'read' ? 'a read lock' : `a semaphore with limit ${shape.limit}`;
}
