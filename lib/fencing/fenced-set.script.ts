/**
 * KEYS[1]: the resource; KEYS[2]: its last-fence key (same hash slot). ARGV: value, fence, ttl in ms ('' for
 * none), the writer's grant ('' when unknown: a bare number was given).
 * Writes the value only when `fence` is greater than the last fence that wrote the resource, or equal to it
 * and from the grant that wrote with it (one holder writes several times under one grant; two grants never
 * carry the same fence, and should they, because the clock the fences rest on went back, the second is
 * refused rather than written over the first's value). Records `fence` and the grant as the last ones:
 * `<fence>` or `<fence>:<grant>`. Both happen in one script, so no newer writer can slip in between the check
 * and the write.
 * Returns {1, fence} written; {0, lastFence} refused; {-1, 0} the last-fence key holds something that is
 * not a fence (the script leaves it, and the resource, untouched).
 */
export const FENCED_SET_SCRIPT = `
local stored = redis.pcall('GET', KEYS[2])
if type(stored) == 'table' then return {-1, '0'} end
if stored then
  local last, grant = string.match(stored, '^(%d+):(%x+)$')
  if not last then last, grant = string.match(stored, '^(%d+)$'), '' end
  if not last then return {-1, '0'} end
  local fence, lastFence = tonumber(ARGV[2]), tonumber(last)
  if fence < lastFence or (fence == lastFence and (ARGV[4] == '' or grant ~= ARGV[4])) then return {0, last} end
end
if ARGV[3] == '' then
  redis.call('SET', KEYS[1], ARGV[1])
else
  redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[3])
end
if ARGV[4] == '' then
  redis.call('SET', KEYS[2], ARGV[2])
else
  redis.call('SET', KEYS[2], ARGV[2] .. ':' .. ARGV[4])
end
return {1, ARGV[2]}
`;
