import { CLIENT_FAMILIES, type ClientFamilyName, type LentClient } from '../support/client-families';
import { connected, trackLockApps, uniqueKey } from '../support/lock-app';
import { type RedisClusterProcess, startRedisCluster } from '../support/redis-cluster';
import { waiterAsleep } from '../support/waiters';

/** The holder's lease: a waiter that no announcement wakes sleeps until its end. */
const HOLDER_TTL_MS = 8_000;
/** Well below HOLDER_TTL_MS: woken by the announcement the new subscription stands for. */
const GRANTED_WITHIN_MS = 3_000;

/**
 * On a Cluster the driver listens through one node's connection, and moves it (to another node, or the same
 * one again) when it ends: a release published meanwhile reaches nobody. A subscription made again counts as
 * an announcement, as after a reconnect on one server.
 */
describe('Redis store on a 3-master Cluster: a release while the subscriber connection moves', () => {
  let cluster: RedisClusterProcess;
  beforeAll(async () => {
    cluster = await startRedisCluster(3);
  });
  afterAll(() => cluster?.stop());
  // Registered before the apps: closed after them (after-hooks run in reverse), as only their owner may.
  const lentClients: LentClient[] = [];
  afterEach(async () => {
    await Promise.all(lentClients.splice(0).map((client) => client.close()));
  });
  const apps = trackLockApps();

  const families: ClientFamilyName[] = ['ioredis', 'node-redis5'];
  it.each(families)(
    "%s cluster: another service's waiter is granted soon after a release made while its subscriber connection was killed",
    async (family) => {
      const lent = [
        await CLIENT_FAMILIES[family].cluster(cluster.startupNodes),
        await CLIENT_FAMILIES[family].cluster(cluster.startupNodes),
      ];
      lentClients.push(...lent);
      const holderSide = await connected((await apps.start({ redis: lent[0].client })).locks);
      const waiterSide = await connected((await apps.start({ redis: lent[1].client })).locks);
      const key = uniqueKey('moved');
      const holder = await holderSide.acquire(key, { ttl: HOLDER_TTL_MS, autoExtend: false });
      const waiting = waiterSide.acquire(key, { ttl: HOLDER_TTL_MS, wait: 20_000 });
      await waiterAsleep(waiterSide, key);
      const killed = await Promise.all(cluster.nodes.map((node) => node.command('CLIENT', 'KILL', 'TYPE', 'pubsub')));
      expect(killed.reduce((total: number, count) => total + Number(count), 0)).toBeGreaterThanOrEqual(1);
      const releasedAt = performance.now();
      expect(await holder.release()).toBe(true);
      const lock = await waiting;
      const after = performance.now() - releasedAt;
      expect(after, `granted ${Math.round(after)} ms after the release`).toBeLessThan(GRANTED_WITHIN_MS);
      await lock.release();
    },
  );
});
