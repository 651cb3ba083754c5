// A release that hands a single-key mutex straight to a waiter of the same process.
import { lockScript } from '../../clients/lock-script';
import { SERVER_CLOCK } from '../../clients/server-clock.lua';
import { NEXT_FENCE } from './next-fence.lua';

/**
 * KEYS: lock key, fence key. ARGV: releasing token, receiving token, ttl (ms), release channel.
 * A release that hands a single-key mutex straight to a waiter of the same process (see ReleaseHub.claim):
 * while the key still holds the releasing token, it is given to the receiving token (SET XX PX) and the
 * next fence is taken (NEXT_FENCE), as ACQUIRE_SCRIPT would have done for the waiter, in the same step.
 * Nothing is published: the key never comes free, so no other waiter could take it.
 * Returns {1, fence, subscribers} handed over, with how many connections listen on the release channel (the
 * releasing process's own subscriber is one: more means waiters elsewhere, see RedisLockStore.handOver; -1
 * when PUBSUB is refused, e.g. by an ACL, which must not fail a release whose grant is already made);
 * {0} the releasing token no longer held the key (nothing changed); {-2} the fence key holds foreign data
 * (the key was released and announced, not handed over).
 */
export const HANDOVER_SCRIPT = `${SERVER_CLOCK}${NEXT_FENCE}
if redis.pcall('GET', KEYS[1]) ~= ARGV[1] then return {0} end
redis.call('SET', KEYS[1], ARGV[2], 'XX', 'PX', ARGV[3])
local fence = next_fence(KEYS[2], nil, 1, 0)
if not fence then
  redis.call('DEL', KEYS[1])
  redis.call('PUBLISH', ARGV[4], ARGV[1])
  return {-2}
end
local listening = redis.pcall('PUBSUB', 'NUMSUB', ARGV[4])
return {1, fence, listening[2] or -1}
`;

export const HANDOVER = lockScript('nestLockHandover', HANDOVER_SCRIPT);
