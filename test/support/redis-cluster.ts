import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { setTimeout as sleep } from 'node:timers/promises';
import { findFreeClusterPort } from './free-port';
import { RedisProcess, startRedis } from './redis-server';

const run = promisify(execFile);
/** The CLI binary; REDIS_CLI_BIN overrides PATH lookup. */
const REDIS_CLI = process.env.REDIS_CLI_BIN ?? 'redis-cli';
const CLUSTER_READY_TIMEOUT_MS = 20_000;
/** A node is judged failing after this long without answering; its replica is then promoted. */
const NODE_TIMEOUT_MS = 2_000;

/** A Redis Cluster, every slot assigned; masters only unless replicas were asked for. */
export interface RedisClusterProcess {
  /** Every node's current process (a node restarted by restartNode is replaced by its new process). */
  readonly nodes: readonly RedisProcess[];
  /** ioredis Cluster startup nodes: `{ host, port }` of every node first started. */
  readonly startupNodes: readonly { host: string; port: number }[];
  /** The master that serves `key` now, and its replicas, as the live nodes report the topology. */
  shardOf(key: string): Promise<{ master: RedisProcess; replicas: RedisProcess[] }>;
  /**
   * Starts a killed node again on its port with its cluster config file (its node id and epoch), so it
   * rejoins the cluster: as a replica of whichever node took its slots over. Resolves once it is a
   * replica in sync.
   */
  restartNode(node: RedisProcess): Promise<RedisProcess>;
  /** Stops every node. Idempotent. */
  stop(): Promise<void>;
}

export interface StartRedisClusterOptions {
  /** Replicas of each master (default 0). */
  readonly replicasPerMaster?: number;
}

/**
 * Starts cluster-enabled servers (`masters` × (1 + replicasPerMaster)), joins them with
 * `redis-cli --cluster create` and resolves once every node reports cluster_state:ok and knows all the
 * others, and every replica is in sync with its master.
 */
export async function startRedisCluster(
  masters = 3,
  options: StartRedisClusterOptions = {},
): Promise<RedisClusterProcess> {
  const replicasPerMaster = options.replicasPerMaster ?? 0;
  const total = masters * (1 + replicasPerMaster);
  const nodes: RedisProcess[] = [];
  /** The cluster config file of each node, by port: a restarted node reads it again. */
  const configFiles = new Map<number, string>();
  const stopped: RedisProcess[] = [];
  const stop = async (): Promise<void> => {
    await Promise.all([...nodes, ...stopped].map((node) => node.stop()));
  };
  const clusterArgs = (configFile: string): string[] => [
    '--cluster-enabled',
    'yes',
    '--cluster-config-file',
    configFile,
    '--cluster-node-timeout',
    String(NODE_TIMEOUT_MS),
    // A full sync starts at once (the default waits 5 s for more replicas to join a diskless transfer).
    '--repl-diskless-sync',
    'yes',
    '--repl-diskless-sync-delay',
    '0',
  ];
  try {
    for (let i = 0; i < total; i++) {
      const node = await startRedis({ choosePort: findFreeClusterPort, args: clusterArgs('{dir}/nodes.conf') });
      nodes.push(node);
      const dir = await node.command('CONFIG', 'GET', 'dir');
      configFiles.set(node.port, `${String((dir as string[])[1])}/nodes.conf`);
    }
    await run(
      REDIS_CLI,
      [
        '--cluster',
        'create',
        ...nodes.map((node) => `${node.host}:${node.port}`),
        '--cluster-replicas',
        String(replicasPerMaster),
        '--cluster-yes',
      ],
      { timeout: 30_000 },
    );
    await waitForClusterOk(nodes, total);
    await waitForReplicasInSync(nodes, masters * replicasPerMaster);
    await waitForReplicasKnown(nodes, masters * replicasPerMaster);
  } catch (error) {
    await stop();
    throw error;
  }

  const byPort = (port: number): RedisProcess => {
    const node = nodes.find((candidate) => candidate.port === port);
    if (!node) throw new Error(`no node of this cluster on port ${port}`);
    return node;
  };
  return {
    nodes,
    startupNodes: nodes.map(({ host, port }) => ({ host, port })),
    shardOf: async (key) => {
      const live = await firstAnswering(nodes);
      const slot = Number(await live.command('CLUSTER', 'KEYSLOT', key));
      const table = parseClusterNodes(String(await live.command('CLUSTER', 'NODES')));
      const master = table.find(
        (entry) =>
          entry.flags.includes('master') &&
          !entry.flags.includes('fail') &&
          entry.slots.some(([from, to]) => slot >= from && slot <= to),
      );
      if (!master) throw new Error(`no live master serves slot ${slot}`);
      const replicas = table.filter((entry) => entry.masterId === master.id && !entry.flags.includes('fail'));
      return { master: byPort(master.port), replicas: replicas.map((entry) => byPort(entry.port)) };
    },
    restartNode: async (killed) => {
      const index = nodes.indexOf(killed);
      const configFile = configFiles.get(killed.port);
      if (index < 0 || !configFile) throw new Error(`no node of this cluster on port ${killed.port}`);
      const restarted = await startRedis({ choosePort: async () => killed.port, args: clusterArgs(configFile) });
      stopped.push(killed);
      nodes[index] = restarted;
      await waitForReplicasInSync([restarted], 1);
      return restarted;
    },
    stop,
  };
}

async function waitForClusterOk(nodes: readonly RedisProcess[], total: number): Promise<void> {
  const deadline = performance.now() + CLUSTER_READY_TIMEOUT_MS;
  let last = '';
  while (performance.now() < deadline) {
    const infos = await Promise.all(nodes.map((node) => node.command('CLUSTER', 'INFO').catch(String)));
    const ready = infos.every(
      (info) =>
        typeof info === 'string' &&
        info.includes('cluster_state:ok') &&
        info.includes('cluster_slots_ok:16384') &&
        info.includes(`cluster_known_nodes:${total}\r\n`),
    );
    if (ready) return;
    last = String(infos[0]);
    await sleep(50);
  }
  throw new Error(`cluster not ready within ${CLUSTER_READY_TIMEOUT_MS} ms; a node reports:\n${last}`);
}

/**
 * Resolves once `replicas` of `nodes` are replicas with their master link up (redis-cli makes them
 * replicas a moment after the cluster already reports ok).
 */
async function waitForReplicasInSync(
  nodes: readonly RedisProcess[],
  replicas: number,
  timeoutMs = CLUSTER_READY_TIMEOUT_MS,
): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  let last = '';
  while (performance.now() < deadline) {
    const infos = (await Promise.all(nodes.map((node) => node.command('INFO', 'replication').catch(String)))).map(
      String,
    );
    const inSync = infos.filter((info) => info.includes('role:slave') && info.includes('master_link_status:up')).length;
    if (inSync >= replicas) return;
    last = infos.join('\n');
    await sleep(50);
  }
  throw new Error(`${replicas} replicas not in sync within ${timeoutMs} ms:\n${last}`);
}

/** Resolves once every node's view of the cluster (gossip) lists `replicas` replicas. */
async function waitForReplicasKnown(nodes: readonly RedisProcess[], replicas: number): Promise<void> {
  const deadline = performance.now() + CLUSTER_READY_TIMEOUT_MS;
  let last = '';
  while (performance.now() < deadline) {
    const views = (await Promise.all(nodes.map((node) => node.command('CLUSTER', 'NODES').catch(String)))).map(String);
    if (
      views.every(
        (view) => parseClusterNodes(view).filter((entry) => entry.flags.includes('slave')).length === replicas,
      )
    )
      return;
    last = views[0];
    await sleep(50);
  }
  throw new Error(`not every node knows the ${replicas} replicas within ${CLUSTER_READY_TIMEOUT_MS} ms:\n${last}`);
}

async function firstAnswering(nodes: readonly RedisProcess[]): Promise<RedisProcess> {
  for (const node of nodes) {
    if (node.pid === undefined) continue;
    try {
      await node.command('PING');
      return node;
    } catch {
      // Killed or paused: ask the next one.
    }
  }
  throw new Error('no node of the cluster answers');
}

interface ClusterNodeEntry {
  readonly id: string;
  readonly port: number;
  readonly flags: readonly string[];
  readonly masterId: string;
  readonly slots: readonly [number, number][];
}

/** CLUSTER NODES: `<id> <ip:port@cport> <flags> <master> <ping> <pong> <epoch> <link> <slot> <slot>…` per line. */
function parseClusterNodes(text: string): ClusterNodeEntry[] {
  return text
    .trim()
    .split('\n')
    .map((line) => {
      const [id, address, flags, masterId, , , , , ...slots] = line.trim().split(' ');
      return {
        id,
        port: Number(address.split('@')[0].split(':').pop()),
        flags: flags.split(','),
        masterId,
        slots: slots
          .filter((range) => !range.startsWith('['))
          .map((range) => {
            const [from, to = from] = range.split('-').map(Number);
            return [from, to] as [number, number];
          }),
      };
    });
}
