import type { LockKeyNames } from '../stores/lock-store.interface';

/**
 * Derives the Redis names of a lock from its key. The key is wrapped in a hash tag, `prefix{key}`, and the
 * fence counter and release channel extend that name, so every key one lock touches lands in the same
 * Redis Cluster slot. (When the key itself contains a `}`, the tag ends there, but it ends at the same
 * place in all three names, so they still share a slot.)
 */
export class LockKeyNamer {
  constructor(private readonly prefix: string) {}

  names(key: string): LockKeyNames {
    const lockKey = `${this.prefix}{${key}}`;
    return { name: key, lockKey, fenceKey: `${lockKey}:fence`, channel: `${lockKey}:released` };
  }
}
