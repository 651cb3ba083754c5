// The run_id of the server a Redlock node reaches (see DistinctServers).
import { type LockScript, sha1 } from '../../clients/lock-script';

/**
 * No KEYS, no ARGV. The run_id of the server (INFO server): one per Redis process, so two Redlock nodes that
 * answer the same one are one server under two names (see DistinctServers). '' when INFO does not say it.
 */
export const SERVER_ID_SCRIPT = `
return string.match(redis.call('INFO', 'server'), 'run_id:(%x+)') or ''
`;

/** Not made with lockScript(): asked of Redlock nodes only, never in a batch (batchIndex 0 is never batched). */
export const SERVER_ID: LockScript = {
  name: 'nestLockServerId',
  lua: SERVER_ID_SCRIPT,
  sha: sha1(SERVER_ID_SCRIPT),
  batchIndex: 0,
};
