// Chooses the store from the validated options (Redlock, one Redis, or in-process) and warns of a weak choice.
import { Logger } from '@nestjs/common';
import type { ResolvedLockOptions } from '../options/lock-options.interface';
import type { LockStore } from './lock-store.interface';
import { MemoryLockStore } from './memory/memory-lock.store';
import { RedisLockStore } from './redis/redis-lock.store';
import { RedlockLockStore } from './redlock/redlock-lock.store';

/** Chooses the store from the validated options: Redlock over `nodes`, one Redis, or in-process. */
export function createLockStore(options: ResolvedLockOptions): LockStore {
  const timing = {
    driftFactor: options.driftFactor,
    commandTimeout: options.commandTimeout,
    minReplicas: options.minReplicas,
  };
  if (options.redis !== undefined) return new RedisLockStore(options.redis, timing);
  if (options.nodes !== undefined) {
    if (options.nodes.length === 1) {
      new Logger('LockModule').warn(
        "Redlock over 1 node: that one Redis decides every lock, with Redlock's extra work and no more safety. " +
          'Use `redis` for one server, or 3 or 5 independent masters for Redlock.',
      );
    } else if (options.nodes.length === 2) {
      new Logger('LockModule').warn(
        'Redlock over 2 nodes: a lock needs both, so one node down makes every lock unavailable. ' +
          'Use 3 or 5 independent masters (one Redis needs no Redlock: use `redis`).',
      );
    }
    return new RedlockLockStore(options.nodes, timing);
  }
  new Logger('LockModule').warn(
    'No Redis configured (neither `redis` nor `nodes`): using the in-process lock store, ' +
      'which excludes callers of this process only. Configure Redis for locks across processes.',
  );
  return new MemoryLockStore();
}
