// A Lua fragment of the scripts that refuse a caller: marks the lock key awaited, so that its release is announced.

/**
 * How long an "awaited" mark outlives the lease it was set on (ms). A refused caller sleeps until that lease
 * would end (plus at most 50 ms of jitter) unless a release wakes it; the mark must still be there when a
 * release comes before then, also when the refusal's reply took a while to reach the caller.
 */
export const AWAITED_MARGIN_MS = 2_000;

/**
 * Sets the "awaited" mark of a lock key (see RELEASE_SCRIPT) for `pttl` ms plus AWAITED_MARGIN_MS: a caller
 * was refused by the lease there and may wait for its release. Lua source, for the scripts that refuse a
 * caller because a lease (a mutex's, a writer's) or a writer's intent holds the key. Nothing is marked for
 * a value without an expiry (-1): no lease of this library, which nothing but forceRelease (always
 * announced) removes, and data that is not ours is left untouched.
 */
export const MARK_AWAITED = `local function mark_awaited(key, pttl)
  if pttl >= 0 then redis.call('SET', key, '1', 'PX', pttl + ${AWAITED_MARGIN_MS}) end
end
`;
