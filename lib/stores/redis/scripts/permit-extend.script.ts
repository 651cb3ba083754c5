// A permit's or reader's renewal.
import { lockScript } from '../../clients/lock-script';
import { SERVER_CLOCK } from '../../clients/server-clock.lua';
import { PERMIT_HELPERS } from './permit-helpers.lua';

/**
 * KEYS: lock key, permits record. ARGV: holder value, ttl (ms).
 * Renews a holder whose lease has not expired: 1, else 0.
 */
export const PERMIT_EXTEND_SCRIPT = `${SERVER_CLOCK}${PERMIT_HELPERS}
if redis.call('TYPE', KEYS[1]).ok ~= 'zset' then return 0 end
local now = now_ms()
local score = redis.call('ZSCORE', KEYS[1], ARGV[1])
if not score or tonumber(score) <= now then return 0 end
redis.call('ZADD', KEYS[1], 'XX', now + tonumber(ARGV[2]), ARGV[1])
settle(KEYS[1], KEYS[2], now)
return 1
`;

export const PERMIT_EXTEND = lockScript('nestLockPermitExtend', PERMIT_EXTEND_SCRIPT);
