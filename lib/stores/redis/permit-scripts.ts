import { MARK_AWAITED } from './lock-scripts';

/**
 * The Lua scripts of keys with several holders: a semaphore's permits (`limit`) and a read-write lock's
 * readers (`mode: 'read'`). Kept apart from the mutex scripts (lock-scripts.ts), whose hot path they do not
 * touch. Each runs atomically on one Redis and touches only one lock's keys, which share its hash tag.
 *
 * Layout of a key held as permits:
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

/** Shared Lua helpers: the server clock, purging expired holders, and the keys' expiry. */
export const PERMIT_HELPERS = `
local function now_ms()
  local time = redis.call('TIME')
  return tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
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

/**
 * KEYS: lock key (the holders' set), fence key, permits record, writer-intent key, awaited mark.
 * ARGV: holder value, ttl (ms), record (`semaphore:<limit>` or `read`), limit (0: no limit, readers), '1' when
 * the caller may attempt again ('0': its last attempt, nothing is marked), and on a Redlock node of N its
 * stride: step N and residue (the node's place in the list).
 * Returns {1, fence, vacant, reach} granted (vacant 1: room for another holder now; reach: the fence counter
 * after the grant, see below); {0, retryAfter} busy (the set is full: ms until its earliest holder expires; a
 * reader behind a writer or a waiting writer: ms until that lease or intent ends); {-3, found} the key is
 * held as something else (`mutex` for a plain lock, else the record found); {-1} the key holds data that is
 * not this library's; {-2} the fence key does.
 *
 * Fences by stride (Redlock): a Redlock grant's fence is the highest its quorum's nodes gave, and with every
 * node counting by INCR two permits granted at once by different quorums could take the same highest value
 * from different nodes. With a stride the counter moves in blocks of N: the grant takes the next block,
 * its fence is the block's value ≡ residue (mod N), one no other node ever hands out, and the counter is set
 * to the block's last value (`reach`). Nodes granting in the same block so all reach the highest fence any of
 * them gave, and the store needs no write-back for them (see fencesAgreed); a mutex or writer counting by
 * INCR afterwards takes the next block's first value.
 *
 * A reader refused by a writer's lease, or by a waiting writer's intent (which becomes that writer's lease),
 * marks the key awaited, so that the writer's release is announced (see RELEASE_SCRIPT), unless it attempts no
 * more; a permit's release is always announced.
 */
export const PERMIT_ACQUIRE_SCRIPT = `${PERMIT_HELPERS}${MARK_AWAITED}
local set, fenceKey, record, writer = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local value, ttl, wanted, limit = ARGV[1], tonumber(ARGV[2]), ARGV[3], tonumber(ARGV[4])
local kind = redis.call('TYPE', set).ok
if kind == 'string' then
  if wanted == 'read' then
    local pttl = redis.call('PTTL', set)
    if ARGV[5] ~= '0' then mark_awaited(KEYS[5], pttl) end
    return {0, pttl}
  end
  return {-3, 'mutex'}
end
if kind ~= 'zset' and kind ~= 'none' then return {-1} end
local now = now_ms()
local count = 0
if kind == 'zset' then
  local found = redis.pcall('HGET', record, '#kind')
  if type(found) ~= 'string' then return {-1} end
  count = purge(set, record, now)
  if count > 0 and found ~= wanted then return {-3, found} end
end
if count == 0 then
  -- Free (or only expired holders were left): whatever the record said, the key starts afresh.
  if redis.call('TYPE', record).ok ~= 'none' then redis.call('DEL', record) end
end
if wanted == 'read' then
  local waiting = redis.pcall('GET', writer)
  if type(waiting) == 'string' then
    local pttl = redis.call('PTTL', writer)
    if ARGV[5] ~= '0' then mark_awaited(KEYS[5], pttl) end
    return {0, pttl}
  end
end
if limit > 0 and count >= limit and not redis.call('ZSCORE', set, value) then
  local first = redis.call('ZRANGE', set, 0, 0, 'WITHSCORES')
  return {0, math.max(1, tonumber(first[2]) - now)}
end
local fence, reach
local step = tonumber(ARGV[6])
if step then
  local current = redis.pcall('GET', fenceKey)
  -- Only a counter this library writes is taken: digits, at most 2^53 - 1 less two blocks (Lua's numbers count
  -- exactly up to 2^53). Anything else is foreign data, as INCR would refuse what is not an integer: taken, a
  -- sign, a fraction or a huge value could move the counter back.
  if type(current) == 'table' or (current and (not string.match(current, '^%d+$') or tonumber(current) > 9007199254740991 - 2 * step)) then
    settle(set, record, now)
    return {-2}
  end
  local block = math.floor((tonumber(current) or 0) / step) + 1
  fence = block * step + tonumber(ARGV[7])
  reach = block * step + step - 1
  redis.call('SET', fenceKey, string.format('%d', reach))
else
  fence = redis.pcall('INCR', fenceKey)
  if type(fence) == 'table' then
    settle(set, record, now)
    return {-2}
  end
  reach = fence
end
if redis.call('ZADD', set, now + ttl, value) == 1 then count = count + 1 end
redis.call('HSET', record, '#kind', wanted, value, string.format('%d', fence))
settle(set, record, now)
local vacant = 0
if limit == 0 or count < limit then vacant = 1 end
return {1, fence, vacant, reach}
`;

/**
 * KEYS: lock key, permits record. ARGV: holder value, ttl (ms).
 * Renews a holder whose lease has not expired: 1, else 0.
 */
export const PERMIT_EXTEND_SCRIPT = `${PERMIT_HELPERS}
if redis.call('TYPE', KEYS[1]).ok ~= 'zset' then return 0 end
local now = now_ms()
local score = redis.call('ZSCORE', KEYS[1], ARGV[1])
if not score or tonumber(score) <= now then return 0 end
redis.call('ZADD', KEYS[1], 'XX', now + tonumber(ARGV[2]), ARGV[1])
settle(KEYS[1], KEYS[2], now)
return 1
`;

/**
 * KEYS: lock key, permits record. ARGV: holder value, hold (ms), release channel.
 * Removes a holder whose lease has not expired (with hold > 0, minHold not reached yet, leaves it to
 * expire in `hold` ms instead) and announces the release with the holder's value: one waiter per process
 * wakes for the freed permit. Returns 1 when released, 0 when it was no longer held.
 */
export const PERMIT_RELEASE_SCRIPT = `${PERMIT_HELPERS}
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

/**
 * KEYS: lock key, permits record. ARGV: holder value.
 * Takes back a permit that did not become a lock (a Redlock grant short of its quorum, an answer too
 * late), silently: like UNDO_SCRIPT, it is no release and wakes nobody.
 */
export const PERMIT_UNDO_SCRIPT = `${PERMIT_HELPERS}
if redis.call('TYPE', KEYS[1]).ok ~= 'zset' then return 0 end
if redis.call('ZREM', KEYS[1], ARGV[1]) == 1 then
  redis.call('HDEL', KEYS[2], ARGV[1])
  settle(KEYS[1], KEYS[2], now_ms())
end
return 1
`;

/**
 * KEYS: lock key, fence key, permits record. ARGV: holder value, fence.
 * The Redlock fence write-back of a permit or reader (see RAISE_FENCES_SCRIPT for a mutex): while the holder
 * is still in the set, raises the fence counter to at least `fence` (never lowers it) and records `fence` as
 * the holder's own in the permits record — the grant's fence, the highest of its quorum, where this node had
 * given it another (by stride, every node but one did). Also sent, not waited for, to just record the grant's
 * fence on nodes whose counter already reached it (RedlockLockStore.recordPermitFence), so that a quorum records
 * the fence its Lock reports and inspect can report that value. Returns 1 when done; 0 when this node no longer
 * holds the permit; {-2, 1} when the fence key holds foreign data.
 */
export const PERMIT_RAISE_FENCE_SCRIPT = `
if type(redis.pcall('ZSCORE', KEYS[1], ARGV[1])) ~= 'string' then return 0 end
local current = redis.pcall('GET', KEYS[2])
if type(current) == 'table' or (current and tonumber(current) == nil) then return {-2, 1} end
if (tonumber(current) or 0) < tonumber(ARGV[2]) then redis.call('SET', KEYS[2], ARGV[2]) end
-- Both keys expire together with the last holder: a record missing here is not recreated without an expiry.
if redis.call('EXISTS', KEYS[3]) == 1 then redis.call('HSET', KEYS[3], ARGV[1], ARGV[2]) end
return 1
`;
