// A Lua fragment of the permit and reader scripts: the server clock, purging expired holders, the keys' expiry.

/**
 * The scripts of keys with several holders (the permit-*.script.ts files, and the writer's on a key readers may
 * hold): a semaphore's permits (`limit`) and a read-write lock's readers (`mode: 'read'`), apart from the mutex
 * scripts, whose hot path they do not touch. Layout of a key held as permits:
 * - the lock key is a sorted set of holders, member `<token>|<instance>`, score = its expiry in the
 *   server's own milliseconds (TIME: scripts replicate their effects, so reading the clock is safe). Every
 *   attempt first drops the members whose expiry has passed: that is how a crashed holder's permit comes
 *   back, with no sweeper and no manual clean-up;
 * - the permits record (a hash, `<lock key>:permits`) names what the key is, field `#kind` =
 *   `semaphore:<limit>` or `read`, so that another limit, or a semaphore beside a read-write lock, is
 *   detected and refused; and it keeps each holder's fence (field = member) for inspect;
 * - both expire with their last holder (PEXPIRE to the latest score), and are deleted when none is left:
 *   an abandoned key vanishes.
 * A plain lock (`SET NX`) meets a sorted set and fails, so a writer, or a mutex, never overlaps permits.
 */

/**
 * Shared Lua helpers: the server's milliseconds (after SERVER_CLOCK), purging expired holders, and the keys'
 * expiry.
 */
export const PERMIT_HELPERS = `
-- The server's milliseconds: SERVER_CLOCK's reading (every script using these helpers starts with it).
local function now_ms()
  return clock_floor() / 1000
end
-- Drops the holders whose lease has expired (and their fences); returns how many holders are left.
local function purge(set, record, now)
  local expired = redis.call('ZRANGEBYSCORE', set, '-inf', now)
  for i = 1, #expired, 1000 do
    redis.call('HDEL', record, unpack(expired, i, math.min(i + 999, #expired)))
  end
  if #expired > 0 then redis.call('ZREMRANGEBYSCORE', set, '-inf', now) end
  return redis.call('ZCARD', set)
end
-- Makes both keys expire with their last holder, or deletes them when none is left.
local function settle(set, record, now)
  local last = redis.call('ZRANGE', set, -1, -1, 'WITHSCORES')
  if #last == 0 then
    redis.call('DEL', set, record)
    return
  end
  local ttl = math.max(1, tonumber(last[2]) - now)
  redis.call('PEXPIRE', set, ttl)
  redis.call('PEXPIRE', record, ttl)
end
`;
