// A release as one script call: the keys and arguments RELEASE_SCRIPT or PERMIT_RELEASE_SCRIPT take.
import type { LockScript, RedisArgument } from '../clients';
import type { LockKeyNames, LockShape } from '../lock-store.interface';
import { isPermit } from '../shared/lock-shapes';
import { PERMIT_RELEASE, RELEASE } from './scripts';

/** One script call: the script, its keys and its arguments. */
export interface ScriptCall {
  readonly script: LockScript;
  readonly names: readonly string[];
  readonly args: readonly RedisArgument[];
}

/**
 * The release of `token`'s grant of `keys`: a mutex's (announced where a refused attempt marked a key awaited,
 * or with `announce`), or a permit's (always announced). `holdFor` > 0 leaves it to expire then (minHold).
 */
export function releaseCall(
  keys: readonly LockKeyNames[],
  token: string,
  holdFor: number,
  shape: LockShape | undefined,
  announce: boolean,
): ScriptCall {
  const hold = Math.max(0, Math.ceil(holdFor));
  if (isPermit(shape)) {
    const key = keys[0];
    return { script: PERMIT_RELEASE, names: [key.lockKey, key.permitsKey], args: [token, hold, key.channel] };
  }
  const names: string[] = [];
  for (const key of keys) names.push(key.lockKey);
  for (const key of keys) names.push(key.awaitedKey);
  const args: RedisArgument[] = [token, hold, announce ? 1 : 0];
  for (const key of keys) args.push(key.channel);
  return { script: RELEASE, names, args };
}
