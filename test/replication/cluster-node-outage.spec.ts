import { Logger } from '@nestjs/common';
import { setTimeout as sleep } from 'node:timers/promises';
import type { LockService } from '../../lib';
import { LockKeyNamer } from '../../lib/keys';
import { trackLockApps, uniqueKey } from '../support/lock-app';
import { type RedisClusterProcess, startRedisCluster } from '../support/redis-cluster';
import { clusterClientLender, warmUp } from './helpers/cluster-locks';

const namer = new LockKeyNamer('lock:');

/**
 * One master of a real Redis Cluster (3 masters, 1 replica each) goes down for good: the module logs the
 * node's outage by its address, each kind of error once per connection rather than at every reconnection
 * attempt. Over ioredis the locks on that
 * shard work again through the promoted replica. A node-redis 5 Cluster does not find it (node-redis #2806,
 * README "Redis Cluster"), so it is only checked for its log here.
 */
describe('Redis store on Redis Cluster: one master down for good', () => {
  let cluster: RedisClusterProcess;
  const clients = clusterClientLender(() => cluster);
  beforeAll(async () => {
    cluster = await startRedisCluster(3, { replicasPerMaster: 1 });
  });
  afterAll(async () => {
    await clients.closeAll();
    await cluster?.stop();
  });
  const apps = trackLockApps();

  it('ioredis and node-redis Clusters: the killed master is logged by address, each kind of error once per connection; ioredis reaches the promoted replica', async () => {
    const warn = vi.spyOn(Logger.prototype, 'warn');
    try {
      const viaIoredis = await apps.start({ redis: await clients.lend('ioredis') });
      const viaNodeRedis = await apps.start({ redis: await clients.lend('node-redis5') });
      const key = uniqueKey('outage');
      await Promise.all([warmUp(viaIoredis.locks, key), warmUp(viaNodeRedis.locks, key)]);
      const { master } = await cluster.shardOf(namer.names(key).lockKey);
      const address = `${master.host}:${master.port}`;
      // Which adapter logged what: each store's connections log through its node's Logger.
      const aboutNode = (locks: LockService) => {
        const logger = (locks as unknown as { store: { node: { logger: Logger } } }).store.node.logger;
        return warn.mock.calls
          .filter((_call, index) => warn.mock.contexts[index] === logger)
          .map(([message]) => String(message))
          .filter((message) => message.includes(`, node ${address}'`));
      };

      await master.kill();
      // ioredis meets the dead node when a command goes to it, and finds the promoted replica after the failover
      // (the node timeout, 2 s); node-redis keeps reconnecting to the dead address, an error at each attempt.
      await warmUp(viaIoredis.locks, key, 20_000);
      await sleep(2_000);
      const logged = { ioredis: aboutNode(viaIoredis.locks), nodeRedis: aboutNode(viaNodeRedis.locks) };
      console.log(JSON.stringify({ nodeOutageWarnings: logged }));
      for (const warnings of [logged.ioredis, logged.nodeRedis]) {
        expect(warnings.length).toBeGreaterThan(0);
        // The command connection, and the subscriber's when a caller of the warm-up waited and subscribed.
        expect(warnings.every((message) => /^Redis connection 'redis( \(subscriber\))?, node /.test(message))).toBe(
          true,
        );
        expect(warnings.every((message) => message.includes(`, node ${address}': `))).toBe(true);
        // Each kind of error once per connection, not once per reconnection attempt: node-redis made one every
        // few hundred ms meanwhile.
        const kinds = warnings.map((message) => message.replace(/\d+/g, '#'));
        expect(new Set(kinds).size).toBe(kinds.length);
      }
    } finally {
      warn.mockRestore();
    }
  });
});
