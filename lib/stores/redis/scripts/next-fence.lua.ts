// A Lua fragment of every granting script: the next fence of a key, above its counter and the server's clock.

/**
 * The largest fence counter a script takes: 2^53 - 1 (Lua's numbers, doubles, count exactly up to 2^53),
 * less room for the blocks a Redlock node's stride may add (see PERMIT_ACQUIRE_SCRIPT).
 */
const LARGEST_COUNTER = '9007199254740991';

/**
 * `now_us()`: the server's clock (TIME) in microseconds, seconds * 1e6 + microseconds: about 1.8e15 today, an
 * exact integer in a Lua number (and a JavaScript one) until the year 2255.
 *
 * `next_fence(key, now, step, residue)`: the fence of a grant at the fence counter `key`, and how far the
 * counter goes (`reach`, which is the fence unless `step` > 1), or nil when the key holds something that is not
 * a counter of this library. The fence is above both the counter and `now - 1`, i.e. at least the clock: so
 * it is strictly above every fence this key was granted before, even when the counter is gone (a restart
 * without persistence, a failover to a replica that had not received the last grants, a Redlock node
 * restarted empty), as long as the clock that gives `now` reads later than the clock that gave those (see
 * docs/design.md, "Fences across data loss"). Why microseconds: one key is never granted a million times a
 * second, so the counter does not run ahead of the clock (fences stay near the time they were granted at,
 * and a clock read after a data loss passes them); coarser, a restart quicker than one tick could give back a
 * fence already given.
 * With a `step` (a Redlock node's permits, see PERMIT_ACQUIRE_SCRIPT) the fence is the next block's value
 * ≡ residue (mod step), above the same bound, and the counter goes to the block's end; step 1 is a plain
 * counter. Numbers are written with string.format('%d'): Lua's tostring would give "1.795e+15".
 */
export const NEXT_FENCE = `local function now_us()
  local time = redis.call('TIME')
  return tonumber(time[1]) * 1000000 + tonumber(time[2])
end
local function next_fence(key, now, step, residue)
  local current = redis.pcall('GET', key)
  local last = 0
  if current then
    -- Only digits this library wrote: a sign, a fraction, a huge value or another type could move it back.
    if type(current) ~= 'string' or not string.match(current, '^%d+$') then return nil end
    last = tonumber(current)
    if last > ${LARGEST_COUNTER} - 2 * step then return nil end
  end
  local block = math.floor(math.max(last, now - 1) / step) + 1
  local reach = block * step + step - 1
  redis.call('SET', key, string.format('%d', reach))
  return block * step + residue, reach
end
`;
