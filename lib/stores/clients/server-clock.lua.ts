// A Lua fragment: the server's clock, read once per script run (a batch of script calls included).

/**
 * `clock_floor()`: the Redis server's clock (TIME) in µs at millisecond resolution, seconds × 10^6 + whole
 * milliseconds × 1000: about 1.8e15 today, an exact integer in a Lua number (and a JavaScript one) until the year
 * 2255. A grant's fence floor on one Redis (NEXT_FENCE), and, divided by 1000, the permit scripts' `now_ms()`.
 *
 * Read on first use and kept for the rest of the run: `TIME` and its two `tonumber`s cost Redis about as much as
 * the commands a grant runs, and a script may want the clock several times (a permit's expiries and its fence,
 * several keys' fences). Every script that uses the clock starts with this fragment; a batch of script calls
 * (script-batch.ts) drops it from each call's script and puts it once before them all, so a batch reads the
 * clock once: its calls run in one moment of the server, one script run.
 */
export const SERVER_CLOCK = `local clock_read
local function clock_floor()
  if not clock_read then
    local time = redis.call('TIME')
    clock_read = tonumber(time[1]) * 1000000 + math.floor(tonumber(time[2]) / 1000) * 1000
  end
  return clock_read
end
`;
