/**
 * The operator's scripts (LockService.inspect and forceRelease): kept apart from the lock scripts, since
 * no acquisition ever runs them. Both touch only one lock's keys, which share its hash tag (Cluster-safe).
 */

/**
 * KEYS: lock key, fence key.
 * Returns {1, value, pttl, fence} when the lock key holds a lease ({0} when free, or when it holds data of
 * another type, which is not a lease). `fence` is the key's fence counter: the holder's own fence, since a
 * grant is the last thing that bumped it (0 when the counter is missing or foreign).
 */
export const INSPECT_SCRIPT = `
local value = redis.pcall('GET', KEYS[1])
if type(value) ~= 'string' then return {0} end
local fence = redis.pcall('GET', KEYS[2])
if type(fence) ~= 'string' then fence = '0' end
return {1, value, redis.call('PTTL', KEYS[1]), fence}
`;

/**
 * KEYS: lock key. ARGV: the key's release channel.
 * Deletes the lease whoever holds it and announces the release with the evicted value as payload, as a
 * release does (waiters wake; a Redlock waiter counts it once across nodes). The fence counter is left as it
 * is, so the next grant's fence is greater. Returns the evicted value, or false when there was no lease.
 */
export const FORCE_RELEASE_SCRIPT = `
local value = redis.pcall('GET', KEYS[1])
if type(value) ~= 'string' then return false end
redis.call('DEL', KEYS[1])
redis.call('PUBLISH', ARGV[1], value)
return value
`;
