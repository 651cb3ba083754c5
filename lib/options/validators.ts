/**
 * The checks both the module's options and a call's options apply to their values: each returns the value
 * when valid and throws a LockOptionsError naming the option otherwise.
 */
import { LockOptionsError } from '../errors';
import { MIN_TTL_MS } from '../lock.constants';

/**
 * The longest finite time in ms an option may give: Redis takes PX / PEXPIRE as a 64-bit integer, and a
 * larger double would be written in exponent notation ("1e+300"), which Redis refuses.
 */
const LONGEST_MS = Number.MAX_SAFE_INTEGER;

/** A lease length (ttl, maxHold): at least MIN_TTL_MS, or no lease could ever be granted on Redis. */
export function leaseLength(option: string, value: unknown, infinityAllowed: boolean): number {
  if (
    typeof value !== 'number' ||
    !(value >= MIN_TTL_MS) ||
    (Number.isFinite(value) ? value > LONGEST_MS : !infinityAllowed)
  ) {
    throw new LockOptionsError(
      option,
      value,
      `a ${infinityAllowed ? '' : 'finite '}number of milliseconds ` +
        `from ${MIN_TTL_MS} to ${LONGEST_MS}: a lease is valid for ` +
        'its length minus the clock-drift allowance (ttl × driftFactor + 2 ms) and a round trip, so a shorter one ' +
        'could never be granted on Redis',
    );
  }
  return value;
}

export function nonNegative(option: string, value: unknown): number {
  if (typeof value !== 'number' || !(value >= 0)) {
    throw new LockOptionsError(option, value, 'a number of milliseconds from 0 (one attempt) up to Infinity');
  }
  return value;
}

/** A finite number of ms from 0 (off): a hold-over must end, or the key would stay locked for nobody. */
export function holdTime(option: string, value: unknown): number {
  if (typeof value !== 'number' || !Number.isFinite(value) || value < 0 || value > LONGEST_MS) {
    throw new LockOptionsError(option, value, `a number of milliseconds from 0 (off) to ${LONGEST_MS}`);
  }
  return value;
}

/**
 * maxHold and minHold together: a lock is never held past maxHold, so a minHold beyond it could not be kept
 * (ShedLock's rule too: lockAtLeastFor ≤ lockAtMostFor). Checked on the merged settings, so a call's minHold
 * is held against the module's maxHold and the other way round.
 */
export function holdBounds(maxHold: number, minHold: number): { maxHold: number; minHold: number } {
  if (minHold > maxHold) {
    throw new LockOptionsError(
      'minHold',
      minHold,
      `at most maxHold (${maxHold} ms): a lock is never held longer than maxHold`,
    );
  }
  return { maxHold, minHold };
}

// eslint-disable-next-line no-control-regex -- matching control characters is the point
const CONTROL_CHARACTER = /[\u0000-\u001f\u007f]/;

/** A non-empty printable string: it is shown in logs and metrics, and stored in Redis with each lease. */
export function printableName(option: string, value: unknown, maxLength: number): string {
  // Control characters would garble log lines and metric labels.
  if (typeof value !== 'string' || value.length === 0 || value.length > maxLength || CONTROL_CHARACTER.test(value)) {
    throw new LockOptionsError(option, value, `a non-empty string of at most ${maxLength} printable characters`);
  }
  return value;
}

export function flag(option: string, value: unknown): boolean {
  if (typeof value !== 'boolean') throw new LockOptionsError(option, value, 'true or false');
  return value;
}

/**
 * A renewal under minReplicas may take the whole WAIT timeout before it counts, and it is sent about a third
 * of a ttl before the lease would end: a longer WAIT would let a lease lapse although every renewal was
 * acknowledged. So the timeout must fit in a third of every ttl it is used with (the module's and a call's).
 */
export function replicaBudget(timeout: number, ttl: number, option: string, value: unknown): void {
  if (timeout > ttl / 3) {
    const expected =
      option === 'ttl' ? `at least 3 × minReplicas.timeout (${timeout} ms)` : `at most a third of the ttl (${ttl} ms)`;
    throw new LockOptionsError(
      option,
      value,
      `${expected}: a renewal is sent about ttl/3 before the lease ends, and may wait that long for replicas`,
    );
  }
}
