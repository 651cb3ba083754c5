// Deletes every lease at a lock's key (LockService.forceRelease): an operator's script.
import { lockScript } from '../../clients/lock-script';

/**
 * KEYS: lock key, permits record. ARGV: the key's release channel.
 * Deletes the lease whoever holds it and announces the release with the evicted value as payload, as a
 * release does (waiters wake; a Redlock waiter counts it once across nodes). The fence counter is left as it
 * is, so the next grant's fence is greater. Returns the evicted value, or false when there was no lease. A
 * key held as permits loses every holder, each announced: returns their values (a table).
 */
export const FORCE_RELEASE_SCRIPT = `
local value = redis.pcall('GET', KEYS[1])
if type(value) == 'string' then
  redis.call('DEL', KEYS[1])
  redis.call('PUBLISH', ARGV[1], value)
  return value
end
if redis.call('TYPE', KEYS[1]).ok ~= 'zset' then return false end
local holders = redis.call('ZRANGE', KEYS[1], 0, -1)
redis.call('DEL', KEYS[1], KEYS[2])
for i = 1, #holders do redis.call('PUBLISH', ARGV[1], holders[i]) end
return holders
`;

export const FORCE_RELEASE = lockScript('nestLockForceRelease', FORCE_RELEASE_SCRIPT);
