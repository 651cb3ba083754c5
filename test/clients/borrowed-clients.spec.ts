import Redis from 'ioredis';
import Valkey, { Cluster as ValkeyCluster } from 'iovalkey';
import { setTimeout as sleep } from 'node:timers/promises';
import { createClient, createCluster } from 'redis';
import { createClient as createClientV4, createCluster as createClusterV4 } from 'redis-v4';
import { LockModule, type LockModuleOptions } from '../../lib';
import { CLIENT_FAMILIES, CLIENT_FAMILY_NAMES, type LentClient } from '../support/client-families';
import { eventually } from '../support/eventually';
import { createLockApp, trackLockApps, uniqueKey } from '../support/lock-app';
import { type RedisProcess, startRedisServers } from '../support/redis-server';
import { waiterAsleep } from '../support/waiters';

/** How many connections a server has now (this probe's own included). */
async function connections(server: RedisProcess): Promise<number> {
  return String(await server.command('CLIENT', 'LIST'))
    .trim()
    .split('\n').length;
}

/**
 * A client of each family lent to LockModule (`redis`, and as Redlock `nodes`): the module works through a
 * connection of its own duplicated from it (plus a subscriber), closes exactly those at shutdown, and
 * leaves the lent client open.
 */
describe('LockModule with a lent client of each family', () => {
  let servers: RedisProcess[];
  beforeAll(async () => {
    servers = await startRedisServers(3);
  });
  afterAll(async () => {
    await Promise.all(servers.map((server) => server.stop()));
  });
  const apps = trackLockApps();

  describe.each(CLIENT_FAMILY_NAMES.map((name) => [name]))('%s', (name) => {
    let lent: LentClient;
    beforeAll(async () => {
      lent = await CLIENT_FAMILIES[name].client(servers[0].url);
    });
    afterAll(() => lent?.close());

    it('locks, wakes a waiter of another module, and opens exactly one lock connection and one subscriber per module', async () => {
      const baseline = await connections(servers[0]);
      const holder = await apps.start({ redis: lent.client as LockModuleOptions['redis'] });
      const waiter = await apps.start({ redis: lent.client as LockModuleOptions['redis'] });
      // The startup check connects each module's lock connection at bootstrap; no subscriber before a wait.
      expect(await connections(servers[0])).toBe(baseline + 2);

      const key = uniqueKey(name);
      const held = await holder.locks.acquire(key);
      const waiting = waiter.locks.acquire(key, { wait: 5_000 });
      // Asleep, so subscribed: its subscriber connection exists before the release.
      await waiterAsleep(waiter.locks, key);
      const releasedAt = performance.now();
      await held.release();
      const next = await waiting;
      expect(performance.now() - releasedAt).toBeLessThan(2_000);
      expect(next.fence).toBeGreaterThan(held.fence);
      // holder: its lock connection; waiter: its lock connection and its subscriber.
      expect(await connections(servers[0])).toBe(baseline + 3);

      await next.release();
      await holder.close();
      await waiter.close();
      await eventually(
        async () => (await connections(servers[0])) === baseline,
        2_000,
        'the module connections closed',
      );
      expect(lent.isOpen()).toBe(true);
      expect(await lent.ping()).toBe('PONG');
    });

    it('app.close() releases a held lock and leaves the lent client open', async () => {
      const app = await createLockApp({ redis: lent.client as LockModuleOptions['redis'], ttl: 30_000 });
      const key = uniqueKey(name);
      await app.locks.acquire(key);
      await app.close();
      expect(lent.isOpen()).toBe(true);
      expect(await lent.ping()).toBe('PONG');
      expect(await servers[0].command('EXISTS', `lock:{${key}}`)).toBe(0);
    });
  });

  it('Redlock over nodes lent by three different families', async () => {
    const lentNodes = await Promise.all([
      CLIENT_FAMILIES['node-redis5'].client(servers[0].url),
      CLIENT_FAMILIES['node-redis4'].client(servers[1].url),
      CLIENT_FAMILIES.iovalkey.client(servers[2].url),
    ]);
    try {
      const app = await createLockApp({
        nodes: lentNodes.map((node) => node.client) as LockModuleOptions['nodes'],
        ttl: 2_000,
      });
      const key = uniqueKey('mixed');
      const lock = await app.locks.acquire(key, { wait: 0 });
      await eventually(
        async () =>
          (await Promise.all(servers.map((server) => server.command('EXISTS', `lock:{${key}}`)))).every((n) => n === 1),
        1_000,
        'held on all three nodes',
      );
      await sleep(2_500);
      expect(lock.signal.aborted).toBe(false);
      expect(await lock.release()).toBe(true);
      await app.close();
      for (const node of lentNodes) {
        expect(node.isOpen()).toBe(true);
        expect(await node.ping()).toBe('PONG');
      }
    } finally {
      await Promise.all(lentNodes.map((node) => node.close()));
    }
  });

  it.each([
    ['an ioredis client', () => new Redis(servers[0].url, { keyPrefix: 'svc:', enableOfflineQueue: false })],
    ['an iovalkey client', () => new Valkey(servers[0].url, { keyPrefix: 'svc:', enableOfflineQueue: false })],
  ])(
    "%s lent with its own keyPrefix and enableOfflineQueue: false locks the same keys as a URL's module, and its first acquire works",
    async (_name, makeClient) => {
      const lent = makeClient();
      try {
        // Without an offline queue, the lent client itself may only be used once it is ready.
        await new Promise((resolve) => lent.once('ready', resolve));
        const lender = await apps.start({ redis: lent as LockModuleOptions['redis'] });
        const byUrl = await apps.start({ redis: servers[0].url });
        const key = uniqueKey('prefixed');
        // Before: the first command of the lazily connected duplicate was refused ("Stream isn't writeable").
        const held = await lender.locks.tryAcquire(key);
        expect(held).not.toBeNull();
        // Before: the lender held svc:lock:{key}, the other module lock:{key}: both got the lock.
        expect(await byUrl.locks.tryAcquire(key)).toBeNull();
        expect(await byUrl.locks.inspect(key)).not.toBeNull();
        expect(await servers[0].command('EXISTS', `svc:lock:{${key}}`)).toBe(0);
        await held?.release();
      } finally {
        lent.disconnect();
      }
    },
  );

  it('ioredis options with a keyPrefix name lock keys without it too', async () => {
    const { host, port } = servers[0];
    const fromOptions = await apps.start({ redis: { host, port, keyPrefix: 'svc:' } });
    const byUrl = await apps.start({ redis: servers[0].url });
    const key = uniqueKey('options-prefix');
    const held = await fromOptions.locks.acquire(key);
    expect(await byUrl.locks.isLocked(key)).toBe(true);
    await held.release();
  });

  it('the module options accept each library’s client and cluster types as they are (no cast)', () => {
    // Compile-time: these calls type-check. Nothing connects (the clients are never used).
    const options: LockModuleOptions[] = [
      { redis: createClient() },
      { redis: createCluster({ rootNodes: [{ url: 'redis://127.0.0.1:1' }] }) },
      { redis: createClientV4() },
      { redis: createClusterV4({ rootNodes: [{ url: 'redis://127.0.0.1:1' }] }) },
      { redis: new Valkey({ lazyConnect: true }) },
      { redis: new ValkeyCluster([], { lazyConnect: true }) },
      { nodes: [createClient(), createClientV4(), new Valkey({ lazyConnect: true })] },
    ];
    for (const option of options) expect(() => LockModule.forRoot(option)).not.toThrow();
    // Only the iovalkey clients hold resources before connecting; node-redis ones were never connected.
    for (const option of options) {
      for (const client of [option.redis, ...(option.nodes ?? [])])
        if (client instanceof Valkey || client instanceof ValkeyCluster) client.disconnect();
    }
  });
});
