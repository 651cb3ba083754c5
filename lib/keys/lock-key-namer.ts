import type { LockKeyNames } from '../stores/lock-store.interface';

/**
 * Derives the Redis names of a lock from its key. The key is wrapped in a hash tag, `prefix{key}`, and the
 * fence counter, release channel, permits record and writer intent extend that name, so every key one lock touches lands in the same
 * Redis Cluster slot. Redis hashes the text between the first `{` and the first `}` after it, or the whole
 * name when that text is empty:
 * - a key containing `}` ends the tag early, but at the same place in all three names: still one slot;
 * - a key starting with `}` would make the tag empty, and each name would hash whole, to different slots.
 *   Such a key (and, to keep the naming injective, one starting with the escape character `\`) is written
 *   with a leading `\`: `}x` → `prefix{\}x}`, whose tag is `\`. Every other key keeps its plain name.
 * The prefix is checked at bootstrap never to end the tag itself (see resolveLockOptions).
 */
export class LockKeyNamer {
  constructor(private readonly prefix: string) {}

  names(key: string): LockKeyNames {
    const lockKey = `${this.prefix}{${tagSafe(key)}}`;
    return {
      name: key,
      lockKey,
      fenceKey: `${lockKey}:fence`,
      channel: `${lockKey}:released`,
      permitsKey: `${lockKey}:permits`,
      writerKey: `${lockKey}:writer`,
    };
  }
}

/** The key as written inside the hash tag: never empty-tag-making, and one-to-one with the key. */
function tagSafe(key: string): string {
  return key.startsWith('}') || key.startsWith('\\') ? `\\${key}` : key;
}
