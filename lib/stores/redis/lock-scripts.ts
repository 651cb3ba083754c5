/**
 * The Lua scripts of the Redis stores. Each runs atomically on one Redis, in one round trip, and every
 * key it touches shares the lock's hash tag (see LockKeyNamer), so they run unchanged on Redis Cluster.
 * Commands that could fail on foreign data use pcall, so a failed script never leaves a half-made grant.
 */

/**
 * KEYS: lock keys 1..n, then fence keys 1..n. ARGV: token, ttl (ms).
 * Sets every lock key NX PX (all or none: keys set before a busy one are deleted again in the same script),
 * then bumps each key's fence counter (which never expires).
 * Returns {1, fence1..fencen} granted; {0, pttl} busy; {-1, i} lock key i holds foreign data;
 * {-2, i} fence key i holds foreign data.
 */
export const ACQUIRE_SCRIPT = `
local n = #KEYS / 2
for i = 1, n do
  if not redis.call('SET', KEYS[i], ARGV[1], 'NX', 'PX', ARGV[2]) then
    local pttl = redis.call('PTTL', KEYS[i])
    for j = 1, i - 1 do redis.call('DEL', KEYS[j]) end
    if pttl == -1 and redis.call('TYPE', KEYS[i]).ok ~= 'string' then return {-1, i} end
    return {0, pttl}
  end
end
local reply = {1}
for i = 1, n do
  local fence = redis.pcall('INCR', KEYS[n + i])
  if type(fence) == 'table' then
    for j = 1, n do redis.call('DEL', KEYS[j]) end
    return {-2, i}
  end
  reply[i + 1] = fence
end
return reply
`;

/**
 * KEYS: lock keys. ARGV: token, ttl (ms).
 * Compare-and-pexpire, all or none: 1 when every key still held the token and was renewed, else 0.
 */
export const EXTEND_SCRIPT = `
for i = 1, #KEYS do
  local value = redis.pcall('GET', KEYS[i])
  if value ~= ARGV[1] then return 0 end
end
for i = 1, #KEYS do redis.call('PEXPIRE', KEYS[i], ARGV[2]) end
return 1
`;

/**
 * KEYS: lock keys. ARGV: token, then one release channel per key.
 * Compare-and-delete of each key still holding the token; each delete is announced on the key's channel
 * (the payload is the token, so a Redlock waiter counts one release once across nodes).
 * Returns how many keys were deleted.
 */
export const RELEASE_SCRIPT = `
local released = 0
for i = 1, #KEYS do
  if redis.pcall('GET', KEYS[i]) == ARGV[1] then
    redis.call('DEL', KEYS[i])
    redis.call('PUBLISH', ARGV[i + 1], ARGV[1])
    released = released + 1
  end
end
return released
`;
