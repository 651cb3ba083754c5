import Redis, { Cluster } from 'ioredis';
import Valkey, { Cluster as ValkeyCluster } from 'iovalkey';
import { createClient, createCluster } from 'redis';
import { createClient as createClientV4, createCluster as createClusterV4 } from 'redis-v4';

/** The Redis client libraries a user can lend the module (README, "Supported clients"). */
export type ClientFamilyName = 'ioredis' | 'iovalkey' | 'node-redis5' | 'node-redis4';

export const CLIENT_FAMILY_NAMES: readonly ClientFamilyName[] = ['ioredis', 'iovalkey', 'node-redis5', 'node-redis4'];

/** A connected client the test made and lends to the module; the test closes it, never the module. */
export interface LentClient {
  /** The object passed as `redis` or as one of `nodes`. */
  readonly client: object;
  /** Whether the client is still connected and usable (after the module closed, it must be). */
  isOpen(): boolean;
  /**
   * Whether the client was closed (quit or disconnected), as opposed to reconnecting after a server was
   * killed: only its owner — the test — may close it.
   */
  wasClosed(): boolean;
  /** PING through this client. */
  ping(): Promise<string>;
  close(): Promise<void>;
}

export interface ClientFamily {
  readonly name: ClientFamilyName;
  /** A connected client of this family to one server. `database` selects a database other than 0. */
  client(url: string, options?: { database?: number }): Promise<LentClient>;
  /** A connected cluster client of this family, from the cluster's startup nodes. */
  cluster(nodes: readonly { host: string; port: number }[]): Promise<LentClient>;
}

/** Connection errors of lent clients are expected in tests that kill servers; the tests check outcomes. */
const ignore = (): undefined => undefined;

/** What the tests use of an ioredis or iovalkey client or cluster. */
interface IoredisLike {
  readonly status: string;
  on(event: 'error', listener: () => void): unknown;
  ping(): Promise<string>;
  disconnect(): void;
}

function ioredisLike(client: IoredisLike): LentClient {
  client.on('error', ignore);
  return {
    client,
    isOpen: () => client.status === 'ready',
    wasClosed: () => client.status === 'end',
    ping: () => client.ping(),
    close: async () => {
      client.disconnect();
    },
  };
}

async function ioredisReady(client: IoredisLike): Promise<LentClient> {
  const lent = ioredisLike(client);
  await client.ping();
  return lent;
}

/** What the tests use of a node-redis v4 or v5 client or cluster. */
interface NodeRedisLike {
  readonly isOpen: boolean;
  connect(): Promise<unknown>;
  on(event: string, listener: () => void): unknown;
  disconnect(): Promise<void>;
}

async function nodeRedisReady(client: NodeRedisLike, ping: () => Promise<string>): Promise<LentClient> {
  client.on('error', ignore);
  await client.connect();
  return {
    client,
    isOpen: () => client.isOpen,
    // node-redis stays open while it reconnects; only a quit or disconnect closes it.
    wasClosed: () => !client.isOpen,
    ping,
    close: async () => {
      if (client.isOpen) await client.disconnect();
    },
  };
}

export const CLIENT_FAMILIES: Readonly<Record<ClientFamilyName, ClientFamily>> = {
  ioredis: {
    name: 'ioredis',
    client: (url, options = {}) => ioredisReady(new Redis(url, { db: options.database ?? 0 })),
    cluster: (nodes) => ioredisReady(new Cluster([...nodes])),
  },
  iovalkey: {
    name: 'iovalkey',
    client: (url, options = {}) => ioredisReady(new Valkey(url, { db: options.database ?? 0 })),
    cluster: (nodes) => ioredisReady(new ValkeyCluster([...nodes])),
  },
  'node-redis5': {
    name: 'node-redis5',
    client: async (url, options = {}) => {
      const client = createClient({ url, database: options.database ?? 0 });
      return nodeRedisReady(client, () => client.ping());
    },
    cluster: async (nodes) => {
      const cluster = createCluster({ rootNodes: nodes.map(({ host, port }) => ({ url: `redis://${host}:${port}` })) });
      return nodeRedisReady(cluster, async () => String(await cluster.sendCommand(undefined, false, ['PING'])));
    },
  },
  'node-redis4': {
    name: 'node-redis4',
    client: async (url, options = {}) => {
      const client = createClientV4({ url, database: options.database ?? 0 });
      return nodeRedisReady(client, () => client.ping());
    },
    cluster: async (nodes) => {
      const cluster = createClusterV4({
        rootNodes: nodes.map(({ host, port }) => ({ url: `redis://${host}:${port}` })),
      });
      return nodeRedisReady(cluster, async () => String(await cluster.sendCommand(undefined, false, ['PING'])));
    },
  },
};

/** A node-redis 4 client in legacy (callback) mode, which the module must still accept. */
export async function legacyNodeRedis4(url: string): Promise<LentClient> {
  const client = createClientV4({ url, legacyMode: true });
  return nodeRedisReady(client, () => client.v4.ping() as Promise<string>);
}
