// Redlock's fence write-back on one node: compare-and-raise of the fence counters.
import { lockScript } from '../../clients/lock-script';
import { COUNTER_OF } from './next-fence.lua';

/**
 * KEYS: lock keys 1..n, then fence keys 1..n. ARGV: token, then one fence value per key.
 * The Redlock store's fence write-back (compare-and-raise): while every lock key still holds the token (or,
 * for a permit, has it in its set of holders),
 * raises each fence counter to at least its value; a counter is never lowered.
 * Returns 1 when the counters are now at least the values; 0 when this node no longer holds the lock;
 * {-2, i} when fence key i holds foreign data (see counter_of).
 */
export const RAISE_FENCES_SCRIPT = `${COUNTER_OF}
local n = #KEYS / 2
for i = 1, n do
  local held = redis.pcall('GET', KEYS[i])
  if held ~= ARGV[1] then
    -- A permit (a semaphore's or a reader's) is held when it is a member of the set at the lock key.
    if type(held) ~= 'table' or type(redis.pcall('ZSCORE', KEYS[i], ARGV[1])) ~= 'string' then return 0 end
  end
end
for i = 1, n do
  local current = redis.pcall('GET', KEYS[n + i])
  local value = counter_of(current)
  if current and not value then return {-2, i} end
  if (value or 0) < tonumber(ARGV[i + 1]) then redis.call('SET', KEYS[n + i], ARGV[i + 1]) end
end
return 1
`;

export const RAISE_FENCES = lockScript('nestLockRaiseFences', RAISE_FENCES_SCRIPT);
