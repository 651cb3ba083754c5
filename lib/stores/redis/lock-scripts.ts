/**
 * The Lua scripts of the Redis stores. Each runs atomically on one Redis, in one round trip, and every
 * key it touches shares the lock's hash tag (see LockKeyNamer), so they run unchanged on Redis Cluster.
 * Commands that could fail on foreign data use pcall, so a failed script never leaves a half-made grant.
 */

/**
 * How long an "awaited" mark outlives the lease it was set on (ms). A refused caller sleeps until that lease
 * would end (plus at most 50 ms of jitter) unless a release wakes it; the mark must still be there when a
 * release comes before then, also when the refusal's reply took a while to reach the caller.
 */
export const AWAITED_MARGIN_MS = 2_000;

/**
 * Sets the "awaited" mark of a lock key (see RELEASE_SCRIPT) for `pttl` ms plus AWAITED_MARGIN_MS: a caller
 * was refused by the lease there and may wait for its release. Lua source, for the scripts that refuse a
 * caller because a lease (a mutex's, a writer's) or a writer's intent holds the key. Nothing is marked for
 * a value without an expiry (-1): no lease of this library, which nothing but forceRelease (always
 * announced) removes, and data that is not ours is left untouched.
 */
export const MARK_AWAITED = `local function mark_awaited(key, pttl)
  if pttl >= 0 then redis.call('SET', key, '1', 'PX', pttl + ${AWAITED_MARGIN_MS}) end
end
`;

/**
 * KEYS: lock keys 1..n, then fence keys 1..n, then awaited marks 1..n. ARGV: token, ttl (ms), and '0' when
 * the caller makes no further attempt (tryAcquire, `wait: 0`, its wait's last attempt), as the read-write and
 * permit scripts take it; absent otherwise, so the hot path sends two arguments.
 * Sets every lock key NX PX (all or none: keys set before a busy one are deleted again in the same script;
 * a key already holding this token counts as set, see below), then bumps each key's fence counter (which
 * never expires). A refusal by a lease marks the key awaited, so that its release is announced; not for a
 * caller that will not wait (the job instances that skip a scheduled tick, as a rule).
 * Returns the fence granted, for one key (the hot path: an integer reply, no table to build nor to parse);
 * {1, fence1..fencen} granted, for several; {0, pttl, holder token} busy; {-3, i, pttl} lock key i holds
 * permits (a semaphore's, or readers': see permit-scripts.ts; the store then takes the writer's path or
 * refuses the mix); {-1, i} lock key i holds foreign data; {-2, i} fence key i holds foreign data.
 */
export const ACQUIRE_SCRIPT = `${MARK_AWAITED}
local n = #KEYS / 3
for i = 1, n do
  if not redis.call('SET', KEYS[i], ARGV[1], 'NX', 'PX', ARGV[2]) then
    local holder = redis.pcall('GET', KEYS[i])
    if holder == ARGV[1] then
      -- Already granted to this very token: this script ran before, but its reply was lost to a
      -- connection reset and the client resent it. Renew, instead of reporting the caller's own key busy.
      redis.call('PEXPIRE', KEYS[i], ARGV[2])
    else
      local pttl = redis.call('PTTL', KEYS[i])
      for j = 1, i - 1 do redis.call('DEL', KEYS[j]) end
      if type(holder) ~= 'string' then
        -- Only here, off the hot path: a set of permits (a semaphore, or readers) is this library's too.
        if redis.call('TYPE', KEYS[i]).ok == 'zset' then return {-3, i, pttl} end
        if pttl == -1 then return {-1, i} end
        holder = ''
      end
      if ARGV[3] ~= '0' then mark_awaited(KEYS[2 * n + i], pttl) end
      return {0, pttl, holder}
    end
  end
end
if n == 1 then
  local fence = redis.pcall('INCR', KEYS[2])
  if type(fence) == 'table' then
    redis.call('DEL', KEYS[1])
    return {-2, 1}
  end
  return fence
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
 * KEYS: lock keys 1..n, then their awaited marks 1..n. ARGV: token, hold (ms), '1' to announce every
 * release (the releasing process has callers waiting for these keys), then one release channel per key.
 * Compare-and-delete of each key still holding the token; with hold > 0 (minHold not reached yet) the key
 * is instead left to expire in `hold` ms, still holding the token (compare-and-pexpire). The release is
 * announced on the key's channel (the payload is the token, so a Redlock waiter counts one release once
 * across nodes: a waiter then attempts, or re-reads the key's remaining time instead of sleeping on the
 * longer lease it saw before) when the key is marked awaited, i.e. an attempt was refused by a lease there
 * since the last announcement, or when ARGV[3] asks. The mark is taken with the announcement: every process
 * with waiters wakes one of them, which attempts again, and one refused marks the key again.
 * Nobody waits for most releases (one caller, or callers on distinct keys), and a PUBLISH is then the most
 * expensive command of the release for Redis.
 * Returns how many keys were released.
 */
export const RELEASE_SCRIPT = `
local n = #KEYS / 2
local hold = tonumber(ARGV[2])
local released = 0
for i = 1, n do
  if redis.pcall('GET', KEYS[i]) == ARGV[1] then
    local awaited
    if hold > 0 then
      redis.call('PEXPIRE', KEYS[i], hold)
      awaited = redis.call('DEL', KEYS[n + i]) == 1
    else
      awaited = redis.call('DEL', KEYS[i], KEYS[n + i]) == 2
    end
    if awaited or ARGV[3] == '1' then redis.call('PUBLISH', ARGV[i + 3], ARGV[1]) end
    released = released + 1
  end
end
return released
`;

/**
 * KEYS: lock key, fence key. ARGV: releasing token, receiving token, ttl (ms), release channel.
 * A release that hands a single-key mutex straight to a waiter of the same process (see ReleaseHub.claim):
 * while the key still holds the releasing token, it is given to the receiving token (SET XX PX) and the
 * fence counter is bumped, as ACQUIRE_SCRIPT would have done for the waiter, in the same step. Nothing is
 * published: the key never comes free, so no other waiter could take it.
 * Returns {1, fence, subscribers} handed over, with how many connections listen on the release channel (the
 * releasing process's own subscriber is one: more means waiters elsewhere, see RedisLockStore.handOver; -1
 * when PUBSUB is refused, e.g. by an ACL, which must not fail a release whose grant is already made);
 * {0} the releasing token no longer held the key (nothing changed); {-2} the fence key holds foreign data
 * (the key was released and announced, not handed over).
 */
export const HANDOVER_SCRIPT = `
if redis.pcall('GET', KEYS[1]) ~= ARGV[1] then return {0} end
redis.call('SET', KEYS[1], ARGV[2], 'XX', 'PX', ARGV[3])
local fence = redis.pcall('INCR', KEYS[2])
if type(fence) == 'table' then
  redis.call('DEL', KEYS[1])
  redis.call('PUBLISH', ARGV[4], ARGV[1])
  return {-2}
end
local listening = redis.pcall('PUBSUB', 'NUMSUB', ARGV[4])
return {1, fence, listening[2] or -1}
`;

/**
 * KEYS: lock keys. ARGV: token.
 * Takes back an attempt that did not become a lock (a Redlock grant short of a quorum, an answer that came
 * too late to be counted; a grant a quorum made and the store took back goes through RELEASE_SCRIPT instead,
 * announced): compare-and-delete, announced to nobody. It is not the release of a held lock: a PUBLISH would
 * wake waiters for nothing (they would spin against a holder that still holds a quorum) and would put the
 * attempt's token, which the caller may use again, among the releases the waiters have already counted.
 */
export const UNDO_SCRIPT = `
for i = 1, #KEYS do
  if redis.pcall('GET', KEYS[i]) == ARGV[1] then redis.call('DEL', KEYS[i]) end
end
return 1
`;

/**
 * KEYS: lock keys 1..n, then fence keys 1..n. ARGV: token, then one fence value per key.
 * The Redlock store's fence write-back (compare-and-raise): while every lock key still holds the token (or,
 * for a permit, has it in its set of holders),
 * raises each fence counter to at least its value; a counter is never lowered.
 * Returns 1 when the counters are now at least the values; 0 when this node no longer holds the lock;
 * {-2, i} when fence key i holds foreign data.
 */
export const RAISE_FENCES_SCRIPT = `
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
  if type(current) == 'table' then return {-2, i} end
  local wanted = tonumber(ARGV[i + 1])
  if current and tonumber(current) == nil then return {-2, i} end
  if (tonumber(current) or 0) < wanted then redis.call('SET', KEYS[n + i], ARGV[i + 1]) end
end
return 1
`;
