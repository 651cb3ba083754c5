/**
 * No KEYS, no ARGV. The run_id of the server (INFO server): one per Redis process, so two Redlock nodes that
 * answer the same one are one server under two names (see DistinctServers). '' when INFO does not say it.
 */
export const SERVER_ID_SCRIPT = `
return string.match(redis.call('INFO', 'server'), 'run_id:(%x+)') or ''
`;
