// What @Locked records on a method, parsed and checked once, when the decorator is applied.
import { LockOptionsError } from '../errors';
import { compileLockKey, type CompiledLockKey } from '../keys/key-template';
import type { AcquireOptions, LockedOptions } from '../options/lock-options.interface';
import { checkAcquireOptionNames } from '../options/call-settings';

/** What @Locked records on a method (under LOCKED_METADATA), parsed once when the decorator is applied. */
export interface LockedMetadata {
  readonly key: CompiledLockKey;
  /** The options passed to LockService, i.e. the LockedOptions without `onBusy`. */
  readonly acquireOptions: AcquireOptions;
  readonly onBusy: 'throw' | 'skip';
}

/** Parses @Locked's arguments; LockOptionsError when they are malformed, so the class fails to load. */
export function createLockedMetadata(key: unknown, options: LockedOptions | undefined): LockedMetadata {
  if (options !== undefined && (typeof options !== 'object' || options === null || Array.isArray(options))) {
    throw new LockOptionsError('@Locked options', options, 'an object of LockedOptions');
  }
  const { onBusy = 'throw', ...acquireOptions } = options ?? {};
  if (onBusy !== 'throw' && onBusy !== 'skip') {
    throw new LockOptionsError('onBusy', onBusy, "'throw' or 'skip'");
  }
  // A misspelt option fails the class as it loads, not each call.
  checkAcquireOptionNames(acquireOptions);
  return { key: compileLockKey(key), acquireOptions, onBusy };
}
