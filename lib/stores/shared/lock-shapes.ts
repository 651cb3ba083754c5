// What a lock's shape is on Redis: permits or not, its record, its kind for inspect, and the conflict of two.
import { LockOptionsError } from '../../errors';
import { describeShape, MUTEX_WANTED } from '../../options/lock-shape';
import type { LockShape } from '../lock-store.interface';

/** Whether a shape is one holder among several (a semaphore's permit, a reader): the permit scripts. */
export function isPermit(shape: LockShape | undefined): shape is Exclude<LockShape, { kind: 'mutex' }> {
  return shape !== undefined && shape.kind !== 'mutex';
}

/**
 * A key held as one kind of lock and asked for as another (a mutex and a semaphore, two limits, a
 * semaphore and a read-write lock): never granted, since the two would count holders differently and
 * could admit more than either allows. Reported as the caller's mistake, with what the key is now.
 */
export function kindConflict(key: string, found: LockShape, wanted: LockShape | undefined): LockOptionsError {
  const option = wanted?.kind === 'read' ? 'mode' : 'limit';
  const value = wanted?.kind === 'semaphore' ? wanted.limit : wanted?.kind === 'read' ? 'read' : undefined;
  return new LockOptionsError(
    option,
    value,
    `what "${key}" is held as now: ${describeShape(found)}. One key is a mutex (or read-write lock) or a ` +
      'semaphore of one limit, never a mix: use another key, or the same options everywhere',
    value === undefined ? MUTEX_WANTED : undefined,
  );
}

/** The shape a permits record names: `semaphore:<limit>` or `read` (undefined when it names neither). */
export function shapeFromRecord(record: string): LockShape | undefined {
  if (record === 'read') return { kind: 'read' };
  const match = /^semaphore:(\d+)$/.exec(record);
  return match ? { kind: 'semaphore', limit: Number(match[1]) } : undefined;
}

/** The permits record of a permit shape (see shapeFromRecord). */
export function recordOf(shape: LockShape): string {
  return shape.kind === 'semaphore' ? `semaphore:${shape.limit}` : shape.kind;
}

/** How inspect names a shape: a reader's key is a read-write lock (its writer is a mutex on the key). */
export function kindOf(shape: LockShape): 'mutex' | 'semaphore' | 'read-write' {
  return shape.kind === 'semaphore' ? 'semaphore' : shape.kind === 'read' ? 'read-write' : 'mutex';
}
