// A writer's acquisition on a key that readers may hold (the writer's side of a read-write lock).
import { lockScript } from '../../clients/lock-script';
import { SERVER_CLOCK } from '../../clients/server-clock.lua';
import { MARK_AWAITED } from './mark-awaited.lua';
import { NEXT_FENCE } from './next-fence.lua';
import { PERMIT_HELPERS } from './permit-helpers.lua';

/**
 * The writer's side of a read-write lock on Redis. A writer is a plain lock (`mode: 'write'` is the
 * default): its hot path is ACQUIRE_SCRIPT, unchanged. Only a writer that meets readers (the mutex script
 * answers -3: the key is a set of permits) comes here, and from then on, while it waits, every attempt of
 * it does: it records its token at the writer-intent key (`<lock key>:writer`, same hash tag), and a new
 * reader finding an intent is refused (PERMIT_ACQUIRE_SCRIPT), so the readers drain and the writer gets in
 * within about one read hold, however many readers keep coming. The intent expires on its own (PX, the
 * writer's ttl, renewed by each attempt: a crashed writer blocks readers for one ttl at most), and the
 * writer withdraws it when done waiting (WITHDRAW_SCRIPT).
 */

/**
 * KEYS: lock key, fence key, permits record, writer-intent key, awaited mark. ARGV: token, ttl (ms), '0' when the
 * caller makes no further attempt (nothing is then recorded: see AcquireRequest.final), and '1' to have readers
 * that refuse it named (a Redlock node), then a Redlock round's fence floor (see ACQUIRE_SCRIPT).
 * As ACQUIRE_SCRIPT for one key, where a set of readers may hold the key: expired readers are dropped
 * first (a key left with none is taken). Returns {1, fence} granted; {0, retryAfter, holder, queued} busy
 * (readers: ms until the last one's lease ends; a writer: its PTTL and value; queued 1 when this token's
 * intent is recorded, 0 when another writer's is, or on a final attempt), and when readers refused it
 * {…, readers, count}: their values when asked for (a Redlock node) and at most 32 of them, else none, and how
 * many there are (so the caller is told readers hold the key);
 * {-3, record} the key is a semaphore; {-1} foreign data at the lock key; {-2} at the fence key.
 * A refusal by another writer's lease marks the key awaited (see RELEASE_SCRIPT), unless the caller attempts no
 * more; readers' releases are always announced.
 */
export const WRITE_ACQUIRE_SCRIPT = `${SERVER_CLOCK}${PERMIT_HELPERS}${MARK_AWAITED}${NEXT_FENCE}
local lock, fenceKey, record, writer = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local token, ttl = ARGV[1], ARGV[2]
-- Records (or renews) this writer's intent unless another writer's is there: 1 when it is this one's.
local function intend()
  if ARGV[3] == '0' then return 0 end
  local waiting = redis.pcall('GET', writer)
  if waiting == false or waiting == token then
    redis.call('SET', writer, token, 'PX', ttl)
    return 1
  end
  return 0
end
if redis.call('TYPE', lock).ok == 'zset' then
  local found = redis.pcall('HGET', record, '#kind')
  if type(found) ~= 'string' then return {-1} end
  local now = now_ms()
  local count = purge(lock, record, now)
  if count > 0 then
    local last = redis.call('ZRANGE', lock, -1, -1, 'WITHSCORES')
    if found ~= 'read' then return {-3, found} end
    local retryAfter = math.max(1, tonumber(last[2]) - now)
    -- Only a Redlock node asks for the readers (ARGV[4] '1'): its store tells readers that hold a quorum from
    -- partial grants being undone. Named when few (all of them, or none).
    if ARGV[4] ~= '1' then return {0, retryAfter, '', intend(), {}, count} end
    local readers = {}
    if count <= 32 then readers = redis.call('ZRANGE', lock, 0, -1) end
    return {0, retryAfter, '', intend(), readers, count}
  end
  -- Only expired holders were left (the set is gone now): the key is free.
  redis.call('DEL', record)
end
if not redis.call('SET', lock, token, 'NX', 'PX', ttl) then
  local holder = redis.pcall('GET', lock)
  if holder == token then
    -- Granted to this token already: the reply was lost and the script resent (see ACQUIRE_SCRIPT).
    redis.call('PEXPIRE', lock, ttl)
  else
    if type(holder) ~= 'string' then return {-1} end
    local pttl = redis.call('PTTL', lock)
    if ARGV[3] ~= '0' then mark_awaited(KEYS[5], pttl) end
    return {0, pttl, holder, intend()}
  end
end
local fence = next_fence(fenceKey, ARGV[5], 1, 0)
if not fence then
  redis.call('DEL', lock)
  return {-2}
end
return {1, fence}
`;

export const WRITE_ACQUIRE = lockScript('nestLockWriteAcquire', WRITE_ACQUIRE_SCRIPT);
