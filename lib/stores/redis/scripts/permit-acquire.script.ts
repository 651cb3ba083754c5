// A semaphore permit's or a reader's acquisition.
import { lockScript } from '../../clients/lock-script';
import { SERVER_CLOCK } from '../../clients/server-clock.lua';
import { MARK_AWAITED } from './mark-awaited.lua';
import { NEXT_FENCE } from './next-fence.lua';
import { PERMIT_HELPERS } from './permit-helpers.lua';

/**
 * KEYS: lock key (the holders' set), fence key, permits record, writer-intent key, awaited mark.
 * ARGV: holder value, ttl (ms), record (`semaphore:<limit>` or `read`), limit (0: no limit, readers), '1' when
 * the caller may attempt again ('0': its last attempt, nothing is marked), and on a Redlock node the round's
 * fence floor in µs (see ACQUIRE_SCRIPT), then, among N ≥ 2 nodes, its stride: step N and residue (the node's
 * place in the list).
 * Returns {1, fence, vacant, reach} granted (vacant 1: room for another holder now; reach: the fence counter
 * after the grant, see below); {0, retryAfter} busy (the set is full: ms until its earliest holder expires; a
 * reader behind a writer or a waiting writer: ms until that lease or intent ends); {-3, found} the key is
 * held as something else (`mutex` for a plain lock, else the record found); {-1} the key holds data that is
 * not this library's; {-2} the fence key does.
 *
 * Fences by stride (Redlock): a Redlock grant's fence is the highest its quorum's nodes gave, and with every
 * node counting by one two permits granted at once by different quorums could take the same highest value
 * from different nodes. With a stride the counter moves in blocks of N (see NEXT_FENCE): the grant takes the
 * next block, its fence is the block's value ≡ residue (mod N), one no other node ever hands out, and the
 * counter is set to the block's last value (`reach`). Nodes granting in the same block (counters ahead of their
 * clocks) so all reach the highest fence any of them gave, and the store needs no write-back for them (see
 * fencesAgreed); a mutex or writer counting by one afterwards takes the next block's first value (or the clock's,
 * when later).
 *
 * A reader refused by a writer's lease, or by a waiting writer's intent (which becomes that writer's lease),
 * marks the key awaited, so that the writer's release is announced (see RELEASE_SCRIPT), unless it attempts no
 * more; a permit's release is always announced.
 */
export const PERMIT_ACQUIRE_SCRIPT = `${SERVER_CLOCK}${PERMIT_HELPERS}${MARK_AWAITED}${NEXT_FENCE}
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
local fence, reach = next_fence(fenceKey, ARGV[6], tonumber(ARGV[7]) or 1, tonumber(ARGV[8]) or 0)
if not fence then
  settle(set, record, now)
  return {-2}
end
if redis.call('ZADD', set, now + ttl, value) == 1 then count = count + 1 end
redis.call('HSET', record, '#kind', wanted, value, string.format('%d', fence))
settle(set, record, now)
local vacant = 0
if limit == 0 or count < limit then vacant = 1 end
return {1, fence, vacant, reach}
`;

export const PERMIT_ACQUIRE = lockScript('nestLockPermitAcquire', PERMIT_ACQUIRE_SCRIPT);
