// Derives a lock's Redis names from its key, all in one Redis Cluster slot (hash tag), one-to-one with the key.
import type { LockKeyNames } from './lock-key-names';

/**
 * Derives the Redis names of a lock from its key. The key is wrapped in a hash tag, `prefix{key}`, and the
 * fence counter, release channel, permits record, writer intent and awaited mark extend that name, so every key one
 * lock touches lands in the same Redis Cluster slot. Redis hashes the text between the first `{` and the first `}`
 * after it, or the whole name when that text is empty:
 * - a key containing `}` ends the tag early, but at the same place in all three names: still one slot;
 * - a key starting with `}` would make the tag empty, and each name would hash whole, to different slots.
 *   Such a key (and, to keep the naming injective, one starting with the escape character `\`) is written
 *   with a leading `\`: `}x` → `prefix{\}x}`, whose tag is `\`. Every other key keeps its plain name.
 * The prefix is checked at bootstrap never to end the tag itself (see resolveLockOptions).
 */
export class LockKeyNamer {
  /**
   * The names of recently used keys. A hot path saving: a key locked again (the common case) reuses six
   * strings already built and hashed, which every Map lookup by channel then finds at once. Bounded: a
   * stream of unique keys only ever keeps the last NAMES_KEPT.
   */
  private readonly recent = new Map<string, LockKeyNames>();

  constructor(private readonly prefix: string) {}

  names(key: string): LockKeyNames {
    const known = this.recent.get(key);
    if (known) return known;
    const lockKey = `${this.prefix}{${tagSafe(key)}}`;
    const names: LockKeyNames = Object.freeze({
      name: key,
      lockKey,
      fenceKey: `${lockKey}:fence`,
      channel: `${lockKey}:released`,
      permitsKey: `${lockKey}:permits`,
      writerKey: `${lockKey}:writer`,
      awaitedKey: `${lockKey}:awaited`,
    });
    if (this.recent.size >= NAMES_KEPT) this.recent.clear();
    this.recent.set(key, names);
    return names;
  }
}

/**
 * How many keys' names a namer keeps (see LockKeyNamer.recent): about 0.5 MiB for keys of 50 characters,
 * ~12 MiB at worst (keys of the maximum 1,024 characters).
 */
const NAMES_KEPT = 1_024;

/** The key as written inside the hash tag: never empty-tag-making, and one-to-one with the key. */
function tagSafe(key: string): string {
  return key.startsWith('}') || key.startsWith('\\') ? `\\${key}` : key;
}
