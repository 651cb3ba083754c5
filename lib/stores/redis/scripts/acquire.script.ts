// A mutex's acquisition (a read-write lock's writer's too, until it meets readers), of one key or several at once.
import { lockScript } from '../../clients/lock-script';
import { SERVER_CLOCK } from '../../clients/server-clock.lua';
import { MARK_AWAITED } from './mark-awaited.lua';
import { NEXT_FENCE } from './next-fence.lua';

/**
 * KEYS: lock keys 1..n, then fence keys 1..n, then awaited marks 1..n. ARGV: token, ttl (ms), and '0' when
 * the caller makes no further attempt (tryAcquire, `wait: 0`, its wait's last attempt), as the read-write and
 * permit scripts take it; absent otherwise, so the hot path sends two arguments. A Redlock node also gets the
 * round's fence floor in µs (AcquireRequest.fenceFloor) as the fourth, taken instead of the server's clock.
 * Sets every lock key NX PX (all or none: keys set before a busy one are deleted again in the same script;
 * a key already holding this token counts as set, see below), then takes each key's next fence (NEXT_FENCE:
 * above its counter, which never expires, and at least the floor: the server's clock, or the round's). A
 * refusal by a lease marks the key awaited, so that its release is announced; not for a caller that will not
 * wait (the job instances that skip a scheduled tick, as a rule).
 * Returns the fence granted, for one key (the hot path: an integer reply, no table to build nor to parse);
 * {1, fence1..fencen} granted, for several; {0, pttl, holder token} busy; {-3, i, pttl} lock key i holds
 * permits (a semaphore's, or readers': see PERMIT_ACQUIRE_SCRIPT; the store then takes the writer's path or
 * refuses the mix); {-1, i} lock key i holds foreign data; {-2, i} fence key i holds foreign data.
 */
export const ACQUIRE_SCRIPT = `${SERVER_CLOCK}${MARK_AWAITED}${NEXT_FENCE}
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
local floor = ARGV[4]
if n == 1 then
  local fence = next_fence(KEYS[2], floor, 1, 0)
  if not fence then
    redis.call('DEL', KEYS[1])
    return {-2, 1}
  end
  return fence
end
local reply = {1}
for i = 1, n do
  local fence = next_fence(KEYS[n + i], floor, 1, 0)
  if not fence then
    for j = 1, n do redis.call('DEL', KEYS[j]) end
    return {-2, i}
  end
  reply[i + 1] = fence
end
return reply
`;

export const ACQUIRE = lockScript('nestLockAcquire', ACQUIRE_SCRIPT);
