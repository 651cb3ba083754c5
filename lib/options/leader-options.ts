/**
 * Leader election's options and names: LeaderOptions as a user gives them (LockService.lead, @Leader),
 * validated where they are given and merged over the module's. A leadership's lock key is keys/leader-namespace.ts.
 */
import { LockOptionsError } from '../errors';
import { leaseLength, printableName } from './validators';
import type { ResolvedLockOptions } from './lock-options.interface';

/** Options of one leadership (`LockService.lead`, `@Leader`). Unset fields fall back to the module's options. */
export interface LeaderOptions {
  /**
   * The leader's lease in ms, renewed while it leads: a leader that crashes or is paused is replaced about
   * this long after its last renewal.
   */
  ttl?: number | undefined;
}

/** A leadership's settings after validation. */
export interface LeaderSettings {
  readonly ttl: number;
}

/**
 * Longest leadership name: its lock key (`leader:<name>`) and its label in metrics and events
 * (`leader:<name>`, at most 256 characters) must both fit.
 */
export const MAX_LEADER_NAME_LENGTH = 200;

/** A leadership's name, or LockOptionsError naming `option` (e.g. `name`, or `@Leader name of Jobs.run`). */
export function leaderName(name: unknown, option = 'name'): string {
  return printableName(option, name, MAX_LEADER_NAME_LENGTH);
}

const LEADER_OPTIONS: ReadonlySet<string> = new Set<keyof LeaderOptions>(['ttl']);

/** Validates `options` (a LockOptionsError naming the option) and merges the module's under them. */
export function resolveLeaderSettings(module: ResolvedLockOptions, options: unknown): LeaderSettings {
  if (options === undefined) return { ttl: module.ttl };
  if (typeof options !== 'object' || options === null || Array.isArray(options)) {
    throw new LockOptionsError('options', options, 'an object of LeaderOptions ({ ttl? })');
  }
  const { ttl } = checkLeaderOptions(options);
  return { ttl: ttl ?? module.ttl };
}

/**
 * Checks every option's name and value: none depends on the module's options, so @Leader checks them all as
 * the class loads. A misspelt option (`tll`) is refused rather than ignored; the module's own checks do the same.
 */
export function checkLeaderOptions(options: object): LeaderOptions {
  for (const option in options) {
    if (!LEADER_OPTIONS.has(option)) {
      throw new LockOptionsError(
        option,
        (options as Record<string, unknown>)[option],
        `one of the options of a leadership: ${[...LEADER_OPTIONS].join(', ')}`,
      );
    }
  }
  const { ttl } = options as LeaderOptions;
  return { ttl: ttl === undefined ? undefined : leaseLength('ttl', ttl, false) };
}
