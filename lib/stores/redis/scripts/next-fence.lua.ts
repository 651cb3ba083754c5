// A Lua fragment of every granting script: the next fence of a key, above its counter and a clock.

/**
 * The largest fence counter a script takes: 2^53 - 1 (Lua's numbers, doubles, count exactly up to 2^53), less
 * 1,024 (ioredis' reply decoder rounds integers within about 60 of 2^53) and, in next_fence, room for the blocks
 * a Redlock node's stride may add (see PERMIT_ACQUIRE_SCRIPT).
 */
const LARGEST_COUNTER = '9007199254739967';

/**
 * `counter_of(text)`: the value of a fence counter as GET read it (false when absent), or nil when it is not a
 * counter of this library: only digits, without a leading zero, up to LARGEST_COUNTER (what INCR takes, less a
 * sign, and what string.format('%d') writes). The write-back scripts take it; next_fence lets INCR decide.
 */
export const COUNTER_OF = `local function counter_of(text)
  if type(text) ~= 'string' or not (text == '0' or string.match(text, '^[1-9]%d*$')) then return nil end
  local value = tonumber(text)
  if value > ${LARGEST_COUNTER} then return nil end
  return value
end
`;

/**
 * `next_fence(key, floor_digits, step, residue)`: the fence of a grant at the fence counter `key`, and how far the
 * counter goes (`reach`, which is the fence unless `step` > 1), or nil when the key holds something that is not a
 * counter of this library (left as found). The fence is above both the counter and a floor, a clock in µs: so it
 * is strictly above every fence this key was granted before, even when the counter is gone (a restart without
 * persistence, a failover to a replica that had not received the last grants, a Redlock node restarted empty), as
 * long as the clock that gives the floor reads later than the clocks that gave those (see docs/design.md, "Fences
 * across data loss"). With a `step` (a Redlock node's permits, see PERMIT_ACQUIRE_SCRIPT) the fence is the next
 * block's value ≡ residue (mod step), above the same bound, and the counter goes to the block's end; step 1 is a
 * plain counter.
 *
 * The floor: `floor_digits` when given (a Redlock round's, the same on every node: see RedlockAttempts), else the
 * server's clock read now (SERVER_CLOCK, which every script using NEXT_FENCE starts with), at millisecond
 * resolution (also for an empty `floor_digits`). On one Redis it must be read when the script runs,
 * not when the call was made: a call queued offline, resent after a reconnect or held by a proxy can run after a
 * data loss with a floor older than grants made meanwhile. (A Redlock grant is returned only within its ttl, and a
 * node restarted empty stays down longer than that.) Millisecond resolution: a loss lasts longer than that, and
 * the floor moves once a millisecond, so a key granted more often takes most fences from INCR alone.
 *
 * Why INCR first: a counter of this library ends a block (every write of it does), so INCRBY step takes the next
 * block and reads the counter in one command, and a grant's script runs on every acquisition, where each command
 * it calls costs Redis about as much as the rest of its Lua. The counter is set once more only when the floor (or
 * an unaligned counter) asks for another block. INCR refuses what is not an integer (writing nothing); an integer
 * out of range, negative or beyond LARGEST_COUNTER, is put back. Numbers are written with string.format('%d'):
 * Lua's tostring would give "1.795e+15".
 */
export const NEXT_FENCE = `local function next_fence(key, floor_digits, step, residue)
  local counted = step == 1 and redis.pcall('INCR', key) or redis.pcall('INCRBY', key, step)
  if type(counted) ~= 'number' then return nil end
  local last = counted - step
  if last < 0 or last > ${LARGEST_COUNTER} - 2 * step then
    redis.call('DECRBY', key, step)
    return nil
  end
  local floor = floor_digits and tonumber(floor_digits)
  if not floor then
    floor_digits = nil
    floor = clock_floor()
  end
  local block = math.floor(math.max(last, floor - 1) / step) + 1
  local reach = block * step + step - 1
  if reach == counted then
    -- INCR took the block already.
  elseif floor_digits and reach == floor then
    redis.call('SET', key, floor_digits)
  else
    redis.call('SET', key, string.format('%d', reach))
  end
  return block * step + residue, reach
end
`;
