// A mutex's release: compare-and-delete, announced when somebody may wait for it.
import { lockScript } from '../../clients/lock-script';

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

export const RELEASE = lockScript('nestLockRelease', RELEASE_SCRIPT);
