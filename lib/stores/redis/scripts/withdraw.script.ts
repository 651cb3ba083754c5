// The withdrawal of a writer's intent.
import { lockScript } from '../../clients/lock-script';

/**
 * KEYS: writer-intent key. ARGV: token, announce (1 or 0), release channel, message (see withdrawalMessage).
 * Deletes the intent if it is still this token's; with announce (the writer gave up), the readers it kept
 * waiting are told on the key's channel, as by a release. Returns 1 when it deleted the intent.
 */
export const WITHDRAW_SCRIPT = `
if redis.pcall('GET', KEYS[1]) ~= ARGV[1] then return 0 end
redis.call('DEL', KEYS[1])
if ARGV[2] == '1' then redis.call('PUBLISH', ARGV[3], ARGV[4]) end
return 1
`;

export const WITHDRAW = lockScript('nestLockWithdraw', WITHDRAW_SCRIPT);
