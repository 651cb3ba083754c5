// A mutex's renewal: compare-and-pexpire of every key.
import { lockScript } from '../../clients/lock-script';

/**
 * KEYS: lock keys. ARGV: token, ttl (ms).
 * Compare-and-pexpire, all or none: 1 when every key still held the token and was renewed, else 0.
 */
export const EXTEND_SCRIPT = `
for i = 1, #KEYS do
  local value = redis.pcall('GET', KEYS[i])
  if value ~= ARGV[1] then return 0 end
end
for i = 1, #KEYS do redis.call('PEXPIRE', KEYS[i], ARGV[2]) end
return 1
`;

export const EXTEND = lockScript('nestLockExtend', EXTEND_SCRIPT);
