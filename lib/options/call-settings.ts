/**
 * The settings one acquisition runs with (CallSettings): a call's AcquireOptions, or a @Locked method's,
 * validated where they are given and merged over the module's resolved options.
 */
import { LockOptionsError } from '../errors';
import type { LockShape } from './lock-shape';
import type { AcquireOptions, ResolvedLockOptions } from './lock-options.interface';
import { flag, holdBounds, holdTime, leaseLength, nonNegative, printableName, replicaBudget } from './validators';

/** The settings one acquisition runs with: the call's options over the module's. */
export interface CallSettings {
  readonly ttl: number;
  readonly wait: number;
  readonly autoExtend: boolean;
  readonly maxHold: number;
  readonly minHold: number;
  readonly reentrant: boolean;
  readonly label?: string;
  readonly signal?: AbortSignal;
  /** What to hold (`limit`, `mode`); a mutex when absent. */
  readonly shape?: LockShape;
}

/** Largest `limit`: far beyond any real pool, small enough to stay an exact integer in every store. */
const MAX_LIMIT = 1_000_000;

/** Longest `label`: a name for people and dashboards, not data. */
const LABEL_MAX_LENGTH = 256;

/** Validates the options of one call (a LockOptionsError at the call) and merges the module's under them. */
export function resolveCallSettings(module: ResolvedLockOptions, call: AcquireOptions | undefined): CallSettings {
  if (call === undefined) return module;
  if (typeof call !== 'object' || call === null) {
    throw new LockOptionsError('options', call, 'an object of AcquireOptions');
  }
  checkAcquireOptionNames(call);
  const signal = call.signal;
  if (signal !== undefined && !(signal instanceof AbortSignal)) {
    throw new LockOptionsError('signal', signal, 'an AbortSignal');
  }
  if (call.ttl !== undefined && module.minReplicas) {
    replicaBudget(module.minReplicas.timeout, leaseLength('ttl', call.ttl, false), 'ttl', call.ttl);
  }
  return {
    ttl: call.ttl === undefined ? module.ttl : leaseLength('ttl', call.ttl, false),
    wait: call.wait === undefined ? module.wait : nonNegative('wait', call.wait),
    autoExtend: call.autoExtend === undefined ? module.autoExtend : flag('autoExtend', call.autoExtend),
    ...holdBounds(
      call.maxHold === undefined ? module.maxHold : leaseLength('maxHold', call.maxHold, true),
      call.minHold === undefined ? module.minHold : holdTime('minHold', call.minHold),
    ),
    reentrant: call.reentrant === undefined ? module.reentrant : flag('reentrant', call.reentrant),
    label: call.label === undefined ? undefined : printableName('label', call.label, LABEL_MAX_LENGTH),
    signal,
    shape: shapeOf(call.limit, call.mode),
  };
}

/** What AcquireOptions may name: anything else is a typo that would otherwise be ignored (`tll`, `wiat`). */
const ACQUIRE_OPTIONS: ReadonlySet<string> = new Set<keyof AcquireOptions>([
  'ttl',
  'wait',
  'autoExtend',
  'maxHold',
  'minHold',
  'reentrant',
  'limit',
  'mode',
  'label',
  'signal',
]);

/**
 * LockOptionsError for an option AcquireOptions does not have, as the module's options are checked. TypeScript
 * catches it only in an object literal: options spread from a config object, or from JavaScript, are not.
 */
export function checkAcquireOptionNames(options: object): void {
  for (const option in options) {
    if (!ACQUIRE_OPTIONS.has(option)) {
      throw new LockOptionsError(
        option,
        (options as Record<string, unknown>)[option],
        `one of the options: ${[...ACQUIRE_OPTIONS].join(', ')}`,
      );
    }
  }
}

/**
 * `limit` and `mode` as a LockShape: undefined (a mutex) without them and for `mode: 'write'`, which is
 * the plain lock. `limit: 1` is a semaphore of one, not a mutex: the key is then a semaphore, and a mutex
 * call on it is refused like any other mix.
 */
function shapeOf(limit: unknown, mode: unknown): LockShape | undefined {
  if (mode !== undefined && mode !== 'read' && mode !== 'write') {
    throw new LockOptionsError('mode', mode, "'read' or 'write'");
  }
  if (limit !== undefined) {
    if (typeof limit !== 'number' || !Number.isInteger(limit) || limit < 1 || limit > MAX_LIMIT) {
      throw new LockOptionsError(
        'limit',
        limit,
        `an integer from 1 to ${MAX_LIMIT}: how many holders the key admits at once`,
      );
    }
    if (mode !== undefined) {
      throw new LockOptionsError(
        'limit',
        limit,
        "no 'mode' beside it: a key is a semaphore or a read-write lock, not both",
      );
    }
    return { kind: 'semaphore', limit };
  }
  return mode === 'read' ? { kind: 'read' } : undefined;
}
