// InvalidLockKeyError: a key, key array or template value that cannot name a lock, refused before any Redis command.
import { LockError } from './lock.error';

/** A key, a key array or a key template value that cannot name a lock. Raised before any Redis command. */
export class InvalidLockKeyError extends LockError {
  constructor(
    readonly key: unknown,
    readonly reason: string,
  ) {
    const message = `Invalid lock key ${describe(key)}: ${reason}.`;
    // The client sent the value: it is told what is wrong with it, in the developer's words.
    super(message, undefined, { code: 'LOCK_INVALID_KEY', message });
  }
}

function describe(value: unknown): string {
  if (typeof value === 'string') return JSON.stringify(value.length > 80 ? `${value.slice(0, 80)}…` : value);
  if (Array.isArray(value)) return `array(${value.length})`;
  if (value === null) return 'null';
  return typeof value === 'object' ? 'object' : String(value);
}
