import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { setTimeout as sleep } from 'node:timers/promises';
import { findFreeClusterPort } from './free-port';
import { RedisProcess, startRedis } from './redis-server';

const run = promisify(execFile);
/** The CLI binary; REDIS_CLI_BIN overrides PATH lookup. */
const REDIS_CLI = process.env.REDIS_CLI_BIN ?? 'redis-cli';
const CLUSTER_READY_TIMEOUT_MS = 20_000;

/** A Redis Cluster of masters only (no replicas), every slot assigned. */
export interface RedisClusterProcess {
  readonly nodes: readonly RedisProcess[];
  /** ioredis Cluster startup nodes: `{ host, port }` of every master. */
  readonly startupNodes: readonly { host: string; port: number }[];
  /** Stops every node. Idempotent. */
  stop(): Promise<void>;
}

/**
 * Starts `masters` cluster-enabled servers, joins them with `redis-cli --cluster create` and resolves once
 * every node reports cluster_state:ok and knows all the others.
 */
export async function startRedisCluster(masters = 3): Promise<RedisClusterProcess> {
  const nodes: RedisProcess[] = [];
  const stop = async (): Promise<void> => {
    await Promise.all(nodes.map((node) => node.stop()));
  };
  try {
    for (let i = 0; i < masters; i++) {
      nodes.push(
        await startRedis({
          choosePort: findFreeClusterPort,
          args: [
            '--cluster-enabled', 'yes',
            '--cluster-config-file', '{dir}/nodes.conf',
            '--cluster-node-timeout', '2000',
          ],
        }),
      );
    }
    await run(
      REDIS_CLI,
      ['--cluster', 'create', ...nodes.map((node) => `${node.host}:${node.port}`), '--cluster-replicas', '0', '--cluster-yes'],
      { timeout: 30_000 },
    );
    await waitForClusterOk(nodes, masters);
  } catch (error) {
    await stop();
    throw error;
  }
  return { nodes, startupNodes: nodes.map(({ host, port }) => ({ host, port })), stop };
}

async function waitForClusterOk(nodes: readonly RedisProcess[], masters: number): Promise<void> {
  const deadline = performance.now() + CLUSTER_READY_TIMEOUT_MS;
  let last = '';
  while (performance.now() < deadline) {
    const infos = await Promise.all(nodes.map((node) => node.command('CLUSTER', 'INFO').catch(String)));
    const ready = infos.every(
      (info) =>
        typeof info === 'string' &&
        info.includes('cluster_state:ok') &&
        info.includes('cluster_slots_ok:16384') &&
        info.includes(`cluster_known_nodes:${masters}\r\n`),
    );
    if (ready) return;
    last = String(infos[0]);
    await sleep(50);
  }
  throw new Error(`cluster not ready within ${CLUSTER_READY_TIMEOUT_MS} ms; a node reports:\n${last}`);
}
