// Whether an async context may take a key it already holds again, as the same or another shape (reentrancy).
import { LockOptionsError } from '../../errors';
import { describeShape, MUTEX_WANTED, type LockShape } from '../../options/lock-shape';

/**
 * Whether a context that holds `key` as `held` may take it again as `wanted` by borrowing the lease it has
 * (reentrancy). Allowed: the same shape again (mutex/write, a reader, a permit of the same limit), and a
 * reader under the write lock (the writer excludes everyone else, so it may read). Anything else would
 * either mix a key's kinds or wait for itself, and is a LockOptionsError:
 * - read → write (an upgrade): the writer would wait for this context's own read lock to end;
 * - a semaphore with another limit, or a semaphore and a mutex / read-write use of one key.
 */
export function checkReentry(key: string, held: LockShape | undefined, wanted: LockShape | undefined): void {
  const heldKind = held?.kind ?? 'mutex';
  const wantedKind = wanted?.kind ?? 'mutex';
  if (heldKind === 'mutex' && (wantedKind === 'mutex' || wantedKind === 'read')) return;
  if (heldKind === 'read' && wantedKind === 'read') return;
  if (held?.kind === 'semaphore' && wanted?.kind === 'semaphore' && held.limit === wanted.limit) return;
  if (heldKind === 'read' && wantedKind === 'mutex') {
    throw new LockOptionsError(
      'mode',
      'write',
      `no write lock on "${key}" while this context holds its read lock: the upgrade would wait for itself. ` +
        'Release the read lock first, or take the write lock from the start',
    );
  }
  if (wanted?.kind === 'semaphore') {
    throw new LockOptionsError(
      'limit',
      wanted.limit,
      `what this context already holds "${key}" as: ${describeShape(held)}`,
    );
  }
  if (wanted?.kind === 'read')
    throw new LockOptionsError('mode', 'read', `what this context already holds "${key}" as: ${describeShape(held)}`);
  throw new LockOptionsError(
    'limit',
    undefined,
    `what this context already holds "${key}" as: ${describeShape(held)}`,
    MUTEX_WANTED,
  );
}
