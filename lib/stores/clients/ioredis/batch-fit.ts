// Whether a server takes batches of script calls (from its INFO), and what to do with a batch it refused.
/** The fields of a server's INFO, as ioredis' ready check parses them. */
export type ServerInfo = Readonly<Record<string, string | undefined>>;

/**
 * Whether a server may be sent batches of script calls (script-batch.ts), from its INFO. A batch declares the
 * keys of many locks, which only one Redis holding every key can run as asked: a Redis Cluster node refuses
 * keys of other slots (CROSSSLOT), and a proxy that routes a script by its first key would run every lock of
 * the batch on that key's shard, where other processes would not look for them. So batches go only to a
 * server that says it is standalone (`redis_mode`, or Valkey 8's `server_mode`; a Sentinel-managed master is
 * one) with cluster mode off; anything else, or no INFO, gets one command per call.
 */
export function fitsBatches(info: ServerInfo): boolean {
  return (info.redis_mode === 'standalone' || info.server_mode === 'standalone') && info.cluster_enabled === '0';
}

/** What to do with the calls of a batch refused as a whole (none of them ran). */
export type BatchRefusal = 'send-each' | 'send-each-and-stop-batching' | 'fail-each';

/**
 * A batch refused as a whole, by the server's error reply:
 * - NOSCRIPT (the server lost its scripts): each call is sent again, on its own and in full;
 * - CROSSSLOT, MOVED, ASK (a server that shards after all, e.g. behind a proxy that answers INFO as a standalone
 *   Redis): each call is sent on its own, and this connection sends no more batches;
 * - anything else (a connection error, BUSY, LOADING, a refused EVALSHA): what each call would have met alone.
 */
export function batchRefusal(error: Error): BatchRefusal {
  const message = String(error.message);
  if (message.startsWith('NOSCRIPT')) return 'send-each';
  if (/^(CROSSSLOT|MOVED|ASK) /.test(message)) return 'send-each-and-stop-batching';
  return 'fail-each';
}
