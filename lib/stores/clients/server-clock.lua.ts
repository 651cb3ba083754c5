// A Lua fragment: the server's clock as a fence floor, read once per script run (a batch of calls included).

/**
 * `clock_floor()`: the Redis server's clock (TIME) in µs at millisecond resolution, seconds × 10^6 + whole
 * milliseconds × 1000: about 1.8e15 today, an exact integer in a Lua number (and a JavaScript one) until the year
 * 2255. Part of NEXT_FENCE (lib/stores/redis/scripts), which takes it as a grant's floor on one Redis.
 */
export const SERVER_CLOCK = `local function clock_floor()
  local time = redis.call('TIME')
  return tonumber(time[1]) * 1000000 + math.floor(tonumber(time[2]) / 1000) * 1000
end
`;

/**
 * The same for a batch of script calls (see script-batch.ts), which drops SERVER_CLOCK from each call's script:
 * the clock is read once for the whole batch, whose calls run in the same moment of the server (one script run),
 * instead of once per grant. At millisecond resolution a grant's floor is the same either way, but for a batch
 * that crosses a millisecond, which takes the earlier one (still read when the batch runs).
 */
export const BATCH_SERVER_CLOCK = `local clock_read
local function clock_floor()
  if not clock_read then
    local time = redis.call('TIME')
    clock_read = tonumber(time[1]) * 1000000 + math.floor(tonumber(time[2]) / 1000) * 1000
  end
  return clock_read
end
`;
