// A permit's or reader's release, always announced.
import { lockScript } from '../../clients/lock-script';
import { SERVER_CLOCK } from '../../clients/server-clock.lua';
import { PERMIT_HELPERS } from './permit-helpers.lua';

/**
 * KEYS: lock key, permits record. ARGV: holder value, hold (ms), release channel.
 * Removes a holder whose lease has not expired (with hold > 0, minHold not reached yet, leaves it to
 * expire in `hold` ms instead) and announces the release with the holder's value: one waiter per process
 * wakes for the freed permit. Returns 1 when released, 0 when it was no longer held.
 */
export const PERMIT_RELEASE_SCRIPT = `${SERVER_CLOCK}${PERMIT_HELPERS}
if redis.call('TYPE', KEYS[1]).ok ~= 'zset' then return 0 end
local now = now_ms()
local score = redis.call('ZSCORE', KEYS[1], ARGV[1])
if not score or tonumber(score) <= now then return 0 end
local hold = tonumber(ARGV[2])
if hold > 0 then
  redis.call('ZADD', KEYS[1], 'XX', now + hold, ARGV[1])
else
  redis.call('ZREM', KEYS[1], ARGV[1])
  redis.call('HDEL', KEYS[2], ARGV[1])
end
settle(KEYS[1], KEYS[2], now)
redis.call('PUBLISH', ARGV[3], ARGV[1])
return 1
`;

export const PERMIT_RELEASE = lockScript('nestLockPermitRelease', PERMIT_RELEASE_SCRIPT);
