// A permit's or reader's fence, recorded on one Redlock node (and the counter raised to it).
import { lockScript } from '../../clients/lock-script';
import { COUNTER_OF } from './next-fence.lua';

/**
 * KEYS: lock key, fence key, permits record. ARGV: holder value, fence.
 * The Redlock fence write-back of a permit or reader (see RAISE_FENCES_SCRIPT for a mutex): while the holder
 * is still in the set, raises the fence counter to at least `fence` (never lowers it) and records `fence` as
 * the holder's own in the permits record — the grant's fence, the highest of its quorum, where this node had
 * given it another (by stride, every node but one did). Also sent, not waited for, to just record the grant's
 * fence on nodes whose counter already reached it (RedlockLockStore.recordPermitFence), so that a quorum records
 * the fence its Lock reports and inspect can report that value. Returns 1 when done; 0 when this node no longer
 * holds the permit; {-2, 1} when the fence key holds foreign data (see counter_of).
 */
export const PERMIT_RAISE_FENCE_SCRIPT = `${COUNTER_OF}
if type(redis.pcall('ZSCORE', KEYS[1], ARGV[1])) ~= 'string' then return 0 end
local current = redis.pcall('GET', KEYS[2])
local value = counter_of(current)
if current and not value then return {-2, 1} end
if (value or 0) < tonumber(ARGV[2]) then redis.call('SET', KEYS[2], ARGV[2]) end
-- Both keys expire together with the last holder: a record missing here is not recreated without an expiry.
if redis.call('EXISTS', KEYS[3]) == 1 then redis.call('HSET', KEYS[3], ARGV[1], ARGV[2]) end
return 1
`;

export const PERMIT_RAISE_FENCE = lockScript('nestLockPermitRaiseFence', PERMIT_RAISE_FENCE_SCRIPT);
