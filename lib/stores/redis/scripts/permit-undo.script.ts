// The take-back of a permit's or reader's attempt that did not become a lock.
import { lockScript } from '../../clients/lock-script';
import { SERVER_CLOCK } from '../../clients/server-clock.lua';
import { PERMIT_HELPERS } from './permit-helpers.lua';

/**
 * KEYS: lock key, permits record. ARGV: holder value.
 * Takes back a permit that did not become a lock (a Redlock grant short of its quorum, an answer too
 * late), silently: like UNDO_SCRIPT, it is no release and wakes nobody.
 */
export const PERMIT_UNDO_SCRIPT = `${SERVER_CLOCK}${PERMIT_HELPERS}
if redis.call('TYPE', KEYS[1]).ok ~= 'zset' then return 0 end
if redis.call('ZREM', KEYS[1], ARGV[1]) == 1 then
  redis.call('HDEL', KEYS[2], ARGV[1])
  settle(KEYS[1], KEYS[2], now_ms())
end
return 1
`;

export const PERMIT_UNDO = lockScript('nestLockPermitUndo', PERMIT_UNDO_SCRIPT);
