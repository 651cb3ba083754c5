// What holds a lock's key (LockService.inspect): an operator's script, never run by an acquisition.
import { lockScript } from '../../clients/lock-script';

/**
 * KEYS: lock key, fence key, permits record.
 * Returns {1, value, pttl, fence} when the lock key holds a lease ({0} when free, or when it holds data of
 * another type, which is not a lease). `fence` is the key's fence counter: the holder's own fence, since a
 * grant is the last thing that bumped it (0 when the counter is missing or foreign). A key held as permits
 * (see PERMIT_ACQUIRE_SCRIPT and permit-helpers.lua.ts) gives {2, record, value1, ttlLeft1, fence1, ...}: its holders
 * whose lease has not expired, each with its own fence.
 */
export const INSPECT_SCRIPT = `
local value = redis.pcall('GET', KEYS[1])
if type(value) == 'string' then
  local fence = redis.pcall('GET', KEYS[2])
  if type(fence) ~= 'string' then fence = '0' end
  return {1, value, redis.call('PTTL', KEYS[1]), fence}
end
if redis.call('TYPE', KEYS[1]).ok ~= 'zset' then return {0} end
local record = redis.pcall('HGET', KEYS[3], '#kind')
if type(record) ~= 'string' then return {0} end
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
local holders = redis.call('ZRANGEBYSCORE', KEYS[1], '(' .. now, '+inf', 'WITHSCORES')
if #holders == 0 then return {0} end
local reply = {2, record}
for i = 1, #holders, 2 do
  local fence = redis.call('HGET', KEYS[3], holders[i]) or '0'
  table.insert(reply, holders[i])
  table.insert(reply, tonumber(holders[i + 1]) - now)
  table.insert(reply, fence)
end
return reply
`;

export const INSPECT = lockScript('nestLockInspect', INSPECT_SCRIPT);
