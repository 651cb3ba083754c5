import { Logger } from '@nestjs/common';
import { type LockClient, createLockClient, lockScript } from '../../lib/stores/clients';
import { CLIENT_FAMILIES, CLIENT_FAMILY_NAMES, type LentClient } from '../support/client-families';
import { eventually } from '../support/eventually';
import { type RedisClusterProcess, startRedisCluster } from '../support/redis-cluster';
import type { RedisProcess } from '../support/redis-server';

const ADD = lockScript('nestLockTestAdd', "return redis.call('INCRBY', KEYS[1], ARGV[1])");
const SUM2 = lockScript(
  'nestLockTestSum2',
  "return redis.call('INCRBY', KEYS[1], 1) + redis.call('INCRBY', KEYS[2], 1)",
);

const logger = new Logger('LockClientTest');

async function totalConnections(nodes: readonly RedisProcess[]): Promise<number> {
  const counts = await Promise.all(
    nodes.map(
      async (node) =>
        String(await node.command('CLIENT', 'LIST'))
          .trim()
          .split('\n').length,
    ),
  );
  return counts.reduce((sum, count) => sum + count, 0);
}

/**
 * The client seam on a real Redis Cluster (3 masters, 1 replica each), once per client family's cluster
 * client: scripts and WAIT go to the master of the keys' slot, pub/sub hears every node, and the
 * connections the adapter opened are closed again.
 */
describe('LockClient on a real Redis Cluster (3 masters, 1 replica each)', () => {
  let cluster: RedisClusterProcess;
  beforeAll(async () => {
    cluster = await startRedisCluster(3, { replicasPerMaster: 1 });
  });
  afterAll(() => cluster?.stop());

  describe.each(CLIENT_FAMILY_NAMES.map((name) => [name]))('over a lent %s cluster', (name) => {
    let lent: LentClient;
    /** One key per master, with that master. */
    let spread: { key: string; master: RedisProcess; replica: RedisProcess }[];
    const opened: LockClient[] = [];

    beforeAll(async () => {
      lent = await CLIENT_FAMILIES[name].cluster(cluster.startupNodes);
      spread = [];
      const seen = new Set<number>();
      for (let i = 0; spread.length < 3 && i < 1000; i++) {
        const key = `${name}:spread:${i}`;
        const { master, replicas } = await cluster.shardOf(key);
        if (seen.has(master.port)) continue;
        seen.add(master.port);
        spread.push({ key, master, replica: replicas[0] });
      }
    });
    afterEach(async () => {
      await Promise.all(opened.splice(0).map((client) => client.close()));
    });
    afterAll(async () => {
      await lent?.close();
    });

    function lockClient(): LockClient {
      const client = createLockClient(lent.client, { label: `test ${name} cluster`, logger, writeFirstWhenIdle: true });
      opened.push(client);
      return client;
    }

    it('is recognised as a Cluster', () => {
      expect(lockClient().isCluster).toBe(true);
    });

    it('runs scripts on the master of their keys, across all three masters', async () => {
      const client = lockClient();
      for (const { key, master } of spread) {
        expect(Number(await client.runScript(ADD, [key], [3]))).toBe(3);
        expect(await master.command('GET', key)).toBe('3');
        expect(await client.exists(key)).toBe(1);
      }
      await expect(client.ping()).resolves.toBeUndefined();
    });

    it('WAITs on the master that ran the script: its replica acknowledges', async () => {
      const client = lockClient();
      for (const { key, replica } of spread) {
        const { reply, acks } = await client.runScriptAndWait(ADD, [`{${key}}:waited`], [1], 1, 1_000);
        expect(Number(reply)).toBe(1);
        expect(acks).toBe(1);
        // A cluster replica answers key commands with MOVED: count its keys instead.
        expect(String(await replica.command('INFO', 'keyspace'))).toMatch(/db0:keys=[1-9]/);
      }
    });

    it('keys of one script in different slots: the error says so (CROSSSLOT)', async () => {
      const client = lockClient();
      await expect(client.runScript(SUM2, [spread[0].key, spread[1].key], [])).rejects.toThrow(
        /CROSSSLOT|same slot|cross slot/i,
      );
      // Sharing a hash tag, they are fine.
      expect(Number(await client.runScript(SUM2, [`{${spread[0].key}}:a`, `{${spread[0].key}}:b`], []))).toBe(2);
    });

    it('a subscriber hears messages published on every master (cluster-wide PUBLISH)', async () => {
      const subscriber = lockClient().duplicate({ subscriber: true });
      opened.push(subscriber);
      const received: string[] = [];
      subscriber.onMessage((channel, message) => channel === `${name}:releases` && received.push(message));
      await subscriber.subscribe(`${name}:releases`);
      for (const { master } of spread) await master.command('PUBLISH', `${name}:releases`, String(master.port));
      await eventually(async () => received.length === 3, 3_000, 'a message from every master');
      expect(received.sort()).toEqual(spread.map(({ master }) => String(master.port)).sort());
    });

    it('closes every connection it opened, and leaves the lent cluster client open', async () => {
      const baseline = await totalConnections(cluster.nodes);
      const client = createLockClient(lent.client, { label: `test ${name} cluster`, logger, writeFirstWhenIdle: true });
      const subscriber = client.duplicate({ subscriber: true });
      for (const { key } of spread) await client.runScript(ADD, [key], [1]);
      await subscriber.subscribe(`${name}:closing`);
      expect(await totalConnections(cluster.nodes)).toBeGreaterThan(baseline);
      await client.close();
      await subscriber.close();
      await eventually(async () => (await totalConnections(cluster.nodes)) === baseline, 3_000, 'back to the baseline');
      expect(lent.isOpen()).toBe(true);
      expect(await lent.ping()).toBe('PONG');
    });
  });
});
