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

  /** Grants each reader on the nodes listed, directly (no quorum needed): what a Redlock attempt leaves there. */
  async function placeReaders(
    key: ReturnType<LockKeyNamer['names']>,
    placements: readonly (readonly [number, string])[],
  ): Promise<void> {
    for (const [node, value] of placements)
      await direct[node].acquire({ keys: [key], token: value, ttl: TTL, shape: reader }, 1_000);
  }

  /** A queued writer's attempt through the Redlock store: refused, with how long it would sleep. */
  async function writerRetryAfter(key: ReturnType<LockKeyNamer['names']>, token: string): Promise<number> {
    const outcome = await store.acquire({ keys: [key], token, ttl: TTL, queued: true });
    if (outcome.acquired) throw new Error(`the writer ${token} was granted beside readers`);
    return outcome.retryAfter;
  }

  beforeAll(async () => {
    servers = await startRedisServers(3);
    store = new RedlockLockStore(
      servers.map((server) => server.url),
      { driftFactor: 0.01 },
    );
    direct = servers.map((server, index) => new RedisLockNode(server.url, { label: `direct[${index}]` }));
  });
  afterAll(async () => {
    await store?.close();
    await Promise.all((direct ?? []).map((node) => node.close()));
    await Promise.all((servers ?? []).map((server) => server.stop()));
  });

  it("partial reader grants on two nodes: retried soon, not after the readers' lease", async () => {
    const key = namer.names(uniqueKey('partial-readers'));
    await placeReaders(key, [
      [0, 'readerA|x'],
      [2, 'readerB|x'],
    ]);
    expect(await writerRetryAfter(key, 'writer|x')).toBeLessThanOrEqual(30);
  });

  it('one reader on a quorum: the writer sleeps until a release (or the lease end), as before', async () => {
    const key = namer.names(uniqueKey('quorum-reader'));
    await placeReaders(key, [
      [0, 'readerA|x'],
      [1, 'readerA|x'],
      [2, 'readerB|x'],
    ]);
    expect(await writerRetryAfter(key, 'writer|y')).toBeGreaterThan(3_000);
  });

  it('more readers than a node names (33, each on a quorum): the writer sleeps, it does not spin', async () => {
    const key = namer.names(uniqueKey('many-readers'));
    // Node 0 holds all 33 (too many to name), nodes 1 and 2 about half each: every reader holds a quorum.
    await placeReaders(
      key,
      Array.from(
        { length: 33 },
        (_, i) =>
          [
            [0, `reader${i}|x`],
            [i % 2 ? 1 : 2, `reader${i}|x`],
          ] as const,
      ).flat(),
    );
    expect(await writerRetryAfter(key, 'writer|many')).toBeGreaterThan(3_000);
  });

  it('readers split over a quorum that includes a slow node: about a node timeout, not a spin', async () => {
    const key = namer.names(uniqueKey('slow-node'));
    await placeReaders(key, [
      [0, 'readerA|x'],
      [1, 'readerA|x'],
      [1, 'readerB|x'],
      [2, 'readerB|x'],
    ]);
    // Node 1, which makes each reader's quorum, answers only after the store heard the others out (50 ms).
    servers[1].pause();
    try {
      // Spinning reads 10-30 ms; the node timeout here is 800 ms (ttl / 5), taken at 0.5-1.5 times.
      expect(await writerRetryAfter(key, 'writer|slow')).toBeGreaterThanOrEqual(400);
    } finally {
      servers[1].resume();
    }
  });

  it('two readers with different quorums: the writer sleeps, it does not spin', async () => {
    const key = namer.names(uniqueKey('two-quorums'));
    await placeReaders(key, [
      [0, 'readerA|x'],
      [1, 'readerA|x'],
      [1, 'readerB|x'],
      [2, 'readerB|x'],
    ]);
    expect(await writerRetryAfter(key, 'writer|z')).toBeGreaterThan(3_000);
  });
});
