// A Lua fragment of every granting script: the next fence of a key, above its counter and the caller's clock.

/**
 * The largest fence counter a script takes: 2^53 - 1 (Lua's numbers, doubles, count exactly up to 2^53),
 * less room for the blocks a Redlock node's stride may add (see PERMIT_ACQUIRE_SCRIPT).
 */
const LARGEST_COUNTER = '9007199254740991';

/**
 * `next_fence(key, floor, step, residue)`: the fence of a grant at the fence counter `key`, and how far the
 * counter goes (`reach`, which is the fence unless `step` > 1), or nil when the key holds something that is not
 * a counter of this library (left as found). `floor` is the clock of the host asking for the grant, in µs
 * (see fenceFloor), as the script's argument (a string of digits): the fence is above both the counter and `floor - 1`, so it is strictly above every fence
 * this key was granted before, even when the counter is gone (a restart without persistence, a failover to a
 * replica that had not received the last grants, a Redlock node restarted empty), as long as the clock that
 * gives `floor` reads later than the clocks that gave those (see docs/design.md, "Fences across data loss").
 * With a `step` (a Redlock node's permits, see PERMIT_ACQUIRE_SCRIPT) the fence is the next block's value
 * ≡ residue (mod step), above the same bound, and the counter goes to the block's end; step 1 is a plain
 * counter.
 *
 * Why INCR first: a counter of this library ends a block (every write of it does), so INCRBY step takes the
 * next block and reads the counter in one command, and the floor moves once a millisecond: most grants of a
 * busy key need nothing more, and a grant's script runs on every acquisition, where each command it calls
 * costs Redis about as much as the rest of its Lua. The counter is set once more only when the floor (or an
 * unaligned counter) asks for another block: to the floor's own digits, as a rule (a key granted less than once a
 * millisecond takes the floor every time). INCR refuses what is not an integer (writing nothing); an integer
 * out of range, negative or beyond LARGEST_COUNTER, is put back. Numbers are written with string.format('%d'):
 * Lua's tostring would give "1.795e+15".
 */
export const NEXT_FENCE = `local function next_fence(key, floor_digits, step, residue)
  local floor = tonumber(floor_digits)
  local counted = step == 1 and redis.pcall('INCR', key) or redis.pcall('INCRBY', key, step)
  if type(counted) ~= 'number' then return nil end
  local last = counted - step
  if last < 0 or last > ${LARGEST_COUNTER} - 2 * step then
    redis.call('DECRBY', key, step)
    return nil
  end
  local block = math.floor(math.max(last, floor - 1) / step) + 1
  local reach = block * step + step - 1
  if reach == counted then
    -- INCR took the block already.
  elseif reach == floor then
    redis.call('SET', key, floor_digits)
  else
    redis.call('SET', key, string.format('%d', reach))
  end
  return block * step + residue, reach
end
`;
