import { LockKeyNamer } from '../../lib/keys';
import { RedisLockNode } from '../../lib/stores/redis/redis-lock-node';
import { RedlockLockStore } from '../../lib/stores/redlock/redlock-lock.store';
import { type RedisProcess, startRedisServers } from '../support/redis-server';
import { uniqueKey } from '../support/lock-app';

/**
 * A writer refused on a quorum by readers that are partial grants (each on one node, refused elsewhere by the
 * writer's intent, and undone silently) must not sleep until their leases end: nobody announces an undo. In
 * the 3-process history run this left a queued writer asleep for ttl/3 (1.33 s at ttl 4 s) and every reader
 * asleep on its intent meanwhile. Deterministic: the readers are put on single nodes directly.
 */
describe('Redlock: a writer refused by readers that hold no quorum', () => {
  let servers: RedisProcess[];
  let store: RedlockLockStore;
  let direct: RedisLockNode[];
  const namer = new LockKeyNamer('lock:');
  const reader = { kind: 'read' } as const;
  const TTL = 4_000;

  beforeAll(async () => {
    servers = await startRedisServers(3);
    store = new RedlockLockStore(servers.map((server) => server.url), { driftFactor: 0.01 });
    direct = servers.map((server, index) => new RedisLockNode(server.url, `direct[${index}]`));
  });
  afterAll(async () => {
    await store?.close();
    await Promise.all((direct ?? []).map((node) => node.close()));
    await Promise.all((servers ?? []).map((server) => server.stop()));
  });

  it('partial reader grants on two nodes: retried soon, not after the readers\' lease', async () => {
    const key = namer.names(uniqueKey('partial-readers'));
    await direct[0].acquire([key], 'readerA|x', TTL, 1_000, reader);
    await direct[2].acquire([key], 'readerB|x', TTL, 1_000, reader);
    const outcome = await store.acquire({ keys: [key], token: 'writer|x', ttl: TTL, queued: true });
    expect(outcome.acquired).toBe(false);
    if (outcome.acquired) return;
    expect(outcome.retryAfter).toBeLessThanOrEqual(30);
  });

  it('one reader on a quorum: the writer sleeps until a release (or the lease end), as before', async () => {
    const key = namer.names(uniqueKey('quorum-reader'));
    await direct[0].acquire([key], 'readerA|x', TTL, 1_000, reader);
    await direct[1].acquire([key], 'readerA|x', TTL, 1_000, reader);
    await direct[2].acquire([key], 'readerB|x', TTL, 1_000, reader);
    const outcome = await store.acquire({ keys: [key], token: 'writer|y', ttl: TTL, queued: true });
    expect(outcome.acquired).toBe(false);
    if (outcome.acquired) return;
    expect(outcome.retryAfter).toBeGreaterThan(3_000);
  });

  it('more readers than a node names (33, each on a quorum): the writer sleeps, it does not spin', async () => {
    const key = namer.names(uniqueKey('many-readers'));
    // Node 0 holds all 33 (too many to name), nodes 1 and 2 about half each: every reader holds a quorum.
    for (let i = 0; i < 33; i++) {
      await direct[0].acquire([key], `reader${i}|x`, TTL, 1_000, reader);
      await direct[i % 2 ? 1 : 2].acquire([key], `reader${i}|x`, TTL, 1_000, reader);
    }
    const outcome = await store.acquire({ keys: [key], token: 'writer|many', ttl: TTL, queued: true });
    expect(outcome.acquired).toBe(false);
    if (outcome.acquired) return;
    expect(outcome.retryAfter).toBeGreaterThan(3_000);
  });

  it('readers split over a quorum that includes a slow node: about a node timeout, not a spin', async () => {
    const key = namer.names(uniqueKey('slow-node'));
    await direct[0].acquire([key], 'readerA|x', TTL, 1_000, reader);
    await direct[1].acquire([key], 'readerA|x', TTL, 1_000, reader);
    await direct[1].acquire([key], 'readerB|x', TTL, 1_000, reader);
    await direct[2].acquire([key], 'readerB|x', TTL, 1_000, reader);
    // Node 1, which makes each reader's quorum, answers only after the store heard the others out (50 ms).
    servers[1].pause();
    try {
      const outcome = await store.acquire({ keys: [key], token: 'writer|slow', ttl: TTL, queued: true });
      expect(outcome.acquired).toBe(false);
      if (outcome.acquired) return;
      // Spinning reads 10-30 ms; the node timeout here is 800 ms (ttl / 5), taken at 0.5-1.5 times.
      expect(outcome.retryAfter).toBeGreaterThanOrEqual(400);
    } finally {
      servers[1].resume();
    }
  });

  it('two readers with different quorums: the writer sleeps, it does not spin', async () => {
    const key = namer.names(uniqueKey('two-quorums'));
    await direct[0].acquire([key], 'readerA|x', TTL, 1_000, reader);
    await direct[1].acquire([key], 'readerA|x', TTL, 1_000, reader);
    await direct[1].acquire([key], 'readerB|x', TTL, 1_000, reader);
    await direct[2].acquire([key], 'readerB|x', TTL, 1_000, reader);
    const outcome = await store.acquire({ keys: [key], token: 'writer|z', ttl: TTL, queued: true });
    expect(outcome.acquired).toBe(false);
    if (outcome.acquired) return;
    expect(outcome.retryAfter).toBeGreaterThan(3_000);
  });
});
