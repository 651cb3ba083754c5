/** What @Leader records on a method, and the one place that reads it back. */
import { LockOptionsError } from '../errors';
import { checkLeaderOptions, type LeaderOptions, leaderName } from '../options/leader-options';

/** Metadata key under which @Leader records its name and options. */
export const LEADER_METADATA = 'LOCK:LEADER';

/** What @Leader records on a method, checked when the decorator is applied. */
export interface LeaderMetadata {
  readonly name: string;
  readonly options: LeaderOptions | undefined;
  /** `Class.method`, for errors and logs. */
  readonly label: string;
}

/** Parses @Leader's arguments; LockOptionsError naming the method when they are malformed. */
export function createLeaderMetadata(name: unknown, options: unknown, label: string): LeaderMetadata {
  const leadership = leaderName(name, `@Leader name of ${label}`);
  if (options !== undefined && (typeof options !== 'object' || options === null || Array.isArray(options))) {
    throw new LockOptionsError(`@Leader options of ${label}`, options, 'an object of LeaderOptions ({ ttl? })');
  }
  try {
    // Names and values: a malformed option fails as the class loads, before any campaign of the application.
    if (options) checkLeaderOptions(options);
  } catch (error) {
    if (!(error instanceof LockOptionsError)) throw error;
    throw new LockOptionsError(`${error.option} of ${label}`, error.value, error.expected);
  }
  return { name: leadership, options: options as LeaderOptions | undefined, label };
}

/** The @Leader metadata of `method`, if it has some. */
export function leaderMetadataOf(method: unknown): LeaderMetadata | undefined {
  if (typeof method !== 'function') return undefined;
  return Reflect.getMetadata(LEADER_METADATA, method) as LeaderMetadata | undefined;
}
