import { LockError } from './lock.error';

/** A key, a key array or a key template value that cannot name a lock. Raised before any Redis command. */
export class InvalidLockKeyError extends LockError {
  constructor(
    readonly key: unknown,
    readonly reason: string,
  ) {
    super(`Invalid lock key ${describe(key)}: ${reason}.`);
  }
}

function describe(value: unknown): string {
  if (typeof value === 'string') return JSON.stringify(value.length > 80 ? `${value.slice(0, 80)}…` : value);
  if (Array.isArray(value)) return `array(${value.length})`;
  if (value === null) return 'null';
  return typeof value === 'object' ? 'object' : String(value);
}
