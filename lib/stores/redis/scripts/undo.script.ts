// The take-back of an attempt that did not become a lock, announced to nobody.
import { lockScript } from '../../clients/lock-script';

/**
 * KEYS: lock keys. ARGV: token.
 * Takes back an attempt that did not become a lock and whose caller may attempt again with the same token (a
 * Redlock node's share of an attempt short of a quorum, a hand-over the store could not vouch for):
 * compare-and-delete, announced to nobody. A grant whose caller ends without it (a quorum's the store took
 * back, or one Redis's answered too late or unacknowledged) goes through RELEASE_SCRIPT instead, announced.
 * An undo is not the release of a held lock: a PUBLISH would wake waiters for nothing (they would spin
 * against a holder that still holds a quorum) and would put the attempt's token, which the caller may use
 * again, among the releases the waiters have already counted.
 */
export const UNDO_SCRIPT = `
for i = 1, #KEYS do
  if redis.pcall('GET', KEYS[i]) == ARGV[1] then redis.call('DEL', KEYS[i]) end
end
return 1
`;

export const UNDO = lockScript('nestLockUndo', UNDO_SCRIPT);
