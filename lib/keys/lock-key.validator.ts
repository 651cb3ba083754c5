// Turns what a caller passed as a key into its list of lock names, or refuses it with InvalidLockKeyError.
import { MAX_KEY_LENGTH } from '../lock.constants';
import { InvalidLockKeyError } from '../errors';

/**
 * Turns what a caller passed as a key into the list of lock names, or throws InvalidLockKeyError.
 * Runs before any store command, so a bad key never reaches Redis (and never becomes "undefined").
 * Duplicates are dropped: locking ['a', 'a'] means locking 'a'.
 */
export function normalizeKeys(key: unknown): string[] {
  if (typeof key === 'string') {
    checkName(key);
    return [key];
  }
  if (!Array.isArray(key)) {
    throw new InvalidLockKeyError(key, `expected a non-empty string or an array of them, got ${kindOf(key)}`);
  }
  if (key.length === 0) throw new InvalidLockKeyError(key, 'an empty array locks nothing');
  const names: string[] = [];
  for (const item of key) {
    if (typeof item !== 'string') {
      throw new InvalidLockKeyError(item, `every key of an array must be a string, got ${kindOf(item)}`);
    }
    checkName(item);
    if (!names.includes(item)) names.push(item);
  }
  return names;
}

function checkName(name: string): void {
  if (name.length === 0) throw new InvalidLockKeyError(name, 'a key must not be empty');
  if (name.length > MAX_KEY_LENGTH) {
    throw new InvalidLockKeyError(name, `a key is at most ${MAX_KEY_LENGTH} characters, this one has ${name.length}`);
  }
}

function kindOf(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  return typeof value;
}
