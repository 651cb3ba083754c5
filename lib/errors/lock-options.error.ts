// LockOptionsError: an option given to LockModule or to one call is not valid; its message never shows a password.
import { LockError } from './lock.error';
import { redactedUrl } from './redacted-url';

/** An option given to LockModule (or to one call) is not valid. Fails the application's bootstrap. */
export class LockOptionsError extends LockError {
  /**
   * The value as given. Kept off the error's own properties (a logged error prints them, with showHidden the
   * hidden ones too, and this may be a URL or options object with a password): the message names it without one.
   */
  get value(): unknown {
    return givenValues.get(this);
  }

  constructor(
    readonly option: string,
    value: unknown,
    /** What a valid value is, in words (the end of the message). */
    readonly expected: string,
    /** How the message names the value, when its printed form would not say it (an option left out). */
    shownAs?: string,
  ) {
    super(`Invalid lock option '${option}': ${shownAs ?? show(value)}. Expected ${expected}.`);
    givenValues.set(this, value);
  }
}

/** Each error's value as given: see `value`. */
const givenValues = new WeakMap<LockOptionsError, unknown>();

function show(value: unknown): string {
  // A connection URL is shown without its password: the message goes to logs.
  if (typeof value === 'string') return JSON.stringify(redactedUrl(value));
  if (typeof value === 'number' || typeof value === 'boolean' || value === undefined || value === null) {
    return String(value);
  }
  if (Array.isArray(value)) return `an array of ${value.length}`;
  const name = (value as object).constructor?.name;
  if (name && name !== 'Object') return `an instance of ${name}`;
  const type = typeof value;
  return `${/^[aeiou]/.test(type) ? 'an' : 'a'} ${type}`;
}
