import { startRedis, type RedisProcess } from '../support/redis-server';

/** The benchmark's own Redis servers: one for the single-node workloads, five for redlock5. */
export interface BenchServers {
  readonly single: RedisProcess;
  readonly five: readonly RedisProcess[];
  /** Kills every server started so far. Idempotent. */
  stop(): Promise<void>;
}

/**
 * Starts six redis-server processes on free loopback ports without persistence (`--save "" --appendonly
 * no`, set by startRedis). Servers are stopped by stop(); should the benchmark die without calling it,
 * startRedis' reaper still kills them.
 */
export async function startBenchServers(): Promise<BenchServers> {
  const started: RedisProcess[] = [];
  const stop = async (): Promise<void> => {
    await Promise.allSettled(started.splice(0).map((server) => server.stop()));
  };
  try {
    for (let index = 0; index < 6; index++) started.push(await startRedis());
  } catch (error) {
    await stop();
    throw error;
  }
  const [single, ...five] = started;
  return { single, five, stop };
}
