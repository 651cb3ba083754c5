// Names the key where a resource's last accepted fencing token lives, in the resource's Redis Cluster slot.
import { LockOptionsError } from '../errors';

/** Appended to a resource's key to name where its last accepted fencing token is kept. */
const LAST_FENCE_SUFFIX = ':last-fence';

/**
 * The key holding the last fencing token a resource accepted. It must live in the resource's Redis Cluster
 * slot (one script touches both), so it keeps the resource's hash tag:
 * - `{account:1}:balance` (a tag) gives `{account:1}:balance:last-fence`: appending never moves the tag;
 * - `balance:1` (no tag: the whole key is hashed) gives `{balance:1}:last-fence`, whose tag is the key.
 * A key without a tag but with a `}` (e.g. `a{}b`, `x}y`) cannot be wrapped that way: pass `fenceKey`.
 */
export function lastFenceKeyOf(key: string): string {
  if (hashTagOf(key) !== undefined) return key + LAST_FENCE_SUFFIX;
  if (!key.includes('}')) return `{${key}}${LAST_FENCE_SUFFIX}`;
  throw new LockOptionsError(
    'key',
    key,
    "a key with a hash tag, or without '}', so that its last-fence key can share its Redis Cluster slot " +
      "(or pass the 'fenceKey' option)",
  );
}

/** Redis Cluster's hash tag: the text between the first '{' and the next '}', when not empty. */
function hashTagOf(key: string): string | undefined {
  const open = key.indexOf('{');
  if (open < 0) return undefined;
  const close = key.indexOf('}', open + 1);
  return close > open + 1 ? key.slice(open + 1, close) : undefined;
}
