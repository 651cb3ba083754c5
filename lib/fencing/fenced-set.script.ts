/**
 * KEYS[1]: the resource; KEYS[2]: its last-fence key (same hash slot). ARGV: value, fence, ttl in ms ('' for
 * none).
 * Writes the value only when `fence` is not older than the last fence that wrote the resource (equal is
 * allowed: one holder writes several times under one grant), then records `fence` as the last one. Both
 * happen in one script, so no newer writer can slip in between the check and the write.
 * Returns {1, fence} written; {0, lastFence} refused; {-1, 0} the last-fence key holds something that is
 * not a fence (the script leaves it, and the resource, untouched).
 */
export const FENCED_SET_SCRIPT = `
local stored = redis.pcall('GET', KEYS[2])
if type(stored) == 'table' then return {-1, '0'} end
local fence = tonumber(ARGV[2])
if stored then
  local last = tonumber(stored)
  if last == nil then return {-1, '0'} end
  if fence < last then return {0, stored} end
end
if ARGV[3] == '' then
  redis.call('SET', KEYS[1], ARGV[1])
else
  redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[3])
end
if not stored or fence > tonumber(stored) then redis.call('SET', KEYS[2], ARGV[2]) end
return {1, ARGV[2]}
`;
