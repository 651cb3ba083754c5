import { Cluster } from 'ioredis';
import { setTimeout as sleep } from 'node:timers/promises';
import { InvalidLockKeyError, LockLostError } from '../../lib';
import { LockKeyNamer } from '../../lib/keys';
import { eventually } from '../support/eventually';
import { trackLockApps, uniqueKey } from '../support/lock-app';
import { type RedisClusterProcess, startRedisCluster } from '../support/redis-cluster';

const namer = new LockKeyNamer('lock:');

/**
 * The one-Redis store on a real Redis Cluster of 3 masters (no replicas), given as a borrowed ioredis
 * Cluster: every key of one lock (lease, fence counter, release channel) shares a hash tag, so each
 * script runs on one node; keys of different locks spread over all three masters.
 */
describe('Redis store on a real 3-master Redis Cluster (ioredis Cluster as `redis`)', () => {
  let cluster: RedisClusterProcess;
  let client: Cluster;
  let other: Cluster;
  beforeAll(async () => {
    cluster = await startRedisCluster(3);
    client = new Cluster([...cluster.startupNodes]);
    other = new Cluster([...cluster.startupNodes]);
    await Promise.all([ready(client), ready(other)]);
  });
  afterAll(async () => {
    client?.disconnect();
    other?.disconnect();
    await cluster?.stop();
  });
  const apps = trackLockApps();

  it('any key maps to one slot per lock: keys starting with } (an empty hash tag) or \\ lock and release', async () => {
    const { locks } = await apps.start({ redis: client, ttl: 10_000 });
    // Leases outlive any stall of the loaded machine: tryAcquire below must find each key still held.
    for (const key of ['}x', '}', '}}{', '\\}x', '\\', uniqueKey('}lead')]) {
      const names = namer.names(key);
      // The lease, its fence counter and its release channel hash to one slot.
      expect(new Set([names.lockKey, names.fenceKey, names.channel].map(slotOf)).size).toBe(1);
      const lock = await locks.acquire(key, { wait: 0 });
      expect(await locks.tryAcquire(key)).toBeNull();
      await expect(lock.release()).resolves.toBe(true);
    }
    // Injective: '}x' and '\\}x' are two locks.
    const first = await locks.acquire('}x');
    const second = await locks.acquire('\\}x', { wait: 0 });
    await Promise.all([first.release(), second.release()]);
  });

  it('acquire, extend, release and rising fences on keys spread over all three masters', async () => {
    const { locks } = await apps.start({ redis: client, ttl: 10_000 });
    const keys = Array.from({ length: 24 }, (_, i) => uniqueKey(`spread-${i}`));
    // The keys really land on different masters.
    const masters = new Set(keys.map((key) => client.slots[slotOf(namer.names(key).lockKey)]?.[0]));
    expect(masters.size).toBe(3);

    for (const key of keys) {
      const first = await locks.acquire(key, { wait: 0 });
      await expect(locks.isLocked(key)).resolves.toBe(true);
      await expect(first.extend(2_000)).resolves.toBeUndefined();
      await expect(first.release()).resolves.toBe(true);
      await expect(locks.isLocked(key)).resolves.toBe(false);
      const second = await locks.acquire(key, { wait: 0 });
      expect(second.fence).toBeGreaterThan(first.fence);
      await second.release();
    }
  });

  it('mutual exclusion and waiting across two clients: the waiter is woken by the release (pub/sub through the cluster)', async () => {
    const holderApp = await apps.start({ redis: client, ttl: 10_000 });
    const waiterApp = await apps.start({ redis: other, ttl: 10_000 });
    const key = uniqueKey('waited');
    const held = await holderApp.locks.acquire(key);
    await expect(waiterApp.locks.tryAcquire(key)).resolves.toBeNull();

    const waiting = waiterApp.locks.acquire(key, { wait: 5_000 });
    await sleep(200);
    const releasedAt = performance.now();
    await held.release();
    const next = await waiting;
    // Woken by the announcement, not by the 10 s expiry of the lease.
    expect(performance.now() - releasedAt).toBeLessThan(2_000);
    expect(next.fence).toBeGreaterThan(held.fence);
    await next.release();
  });

  it('auto-extension keeps a lock past its ttl; losing it (keys deleted) aborts the signal', async () => {
    // ttl 1000: each renewal has ~670 ms to come back from a master sharing 2 loaded cores; 1.5 s is past it.
    const { locks } = await apps.start({ redis: client, ttl: 1_000 });
    const key = uniqueKey('renewed');
    const lock = await locks.acquire(key);
    await sleep(1_500);
    expect(lock.signal.aborted).toBe(false);
    await client.del(namer.names(key).lockKey);
    await expect(lock.extend()).rejects.toBeInstanceOf(LockLostError);
    expect(lock.signal.reason).toBeInstanceOf(LockLostError);
  });

  it('a multi-key lock whose keys hash to different slots fails with a clear InvalidLockKeyError, and locks nothing', async () => {
    const { locks } = await apps.start({ redis: client });
    const first = uniqueKey('cross-a');
    let second = uniqueKey('cross-b');
    while (slotOf(namer.names(second).lockKey) === slotOf(namer.names(first).lockKey)) second = uniqueKey('cross-b');
    const keys = [first, second];

    const error = await locks.acquire(keys, { wait: 0 }).then(
      () => undefined,
      (rejection: unknown) => rejection,
    );
    expect(error).toBeInstanceOf(InvalidLockKeyError);
    expect((error as Error).message).toMatch(/hash slot/);
    expect((error as Error).message).toMatch(/hash tag/);
    await expect(locks.isLocked(keys[0])).resolves.toBe(false);
    await expect(locks.isLocked(keys[1])).resolves.toBe(false);
  });

  it('a multi-key lock whose keys share a hash tag works, all or none', async () => {
    const { locks } = await apps.start({ redis: client });
    const tag = uniqueKey('account');
    const keys = [`{${tag}}:from`, `{${tag}}:to`];
    expect(slotOf(namer.names(keys[0]).lockKey)).toBe(slotOf(namer.names(keys[1]).lockKey));

    const both = await locks.acquire(keys, { wait: 0 });
    expect(Object.keys(both.fences).sort()).toEqual([...keys].sort());
    // One of the two taken: the pair cannot be had, and the free key is not left locked by the attempt.
    await expect(locks.tryAcquire([keys[1], `{${tag}}:other`])).resolves.toBeNull();
    await expect(locks.isLocked(`{${tag}}:other`)).resolves.toBe(false);
    await expect(both.release()).resolves.toBe(true);
    const again = await locks.acquire([keys[1], `{${tag}}:other`], { wait: 0 });
    await again.release();
  });

  it('a semaphore on the cluster: its set, permits record, fence and intent keys share one slot; limit 2 holds across two clients', async () => {
    const first = await apps.start({ redis: client, ttl: 10_000 });
    const second = await apps.start({ redis: other, ttl: 10_000 });
    for (const key of [uniqueKey('stripe'), '}lead', uniqueKey('{tag}x')]) {
      const names = namer.names(key);
      expect(
        new Set(
          [names.lockKey, names.fenceKey, names.channel, names.permitsKey, names.writerKey, names.awaitedKey].map(
            slotOf,
          ),
        ).size,
      ).toBe(1);
      const a = await first.locks.acquire(key, { limit: 2 });
      const b = await second.locks.acquire(key, { limit: 2 });
      expect(b.fence).toBeGreaterThan(a.fence);
      expect(await first.locks.tryAcquire(key, { limit: 2 })).toBeNull();
      // A waiter on the other client is woken by the release (pub/sub through the cluster).
      const waiting = second.locks.acquire(key, { limit: 2, wait: 8_000 });
      await sleep(100);
      await a.release();
      const c = await waiting;
      expect((await first.locks.inspect(key))?.holders).toHaveLength(2);
      await Promise.all([b.release(), c.release()]);
    }
  });

  it('a read-write lock on the cluster: readers together, a writer queued behind them (intent key in the same slot) gets in', async () => {
    const first = await apps.start({ redis: client, ttl: 10_000 });
    const second = await apps.start({ redis: other, ttl: 10_000 });
    const key = uniqueKey('report');
    const readers = [
      await first.locks.acquire(key, { mode: 'read' }),
      await second.locks.acquire(key, { mode: 'read' }),
    ];
    const writer = second.locks.acquire(key, { mode: 'write', wait: 8_000 });
    await eventually(
      async () => (await client.exists(namer.names(key).writerKey)) === 1,
      2_000,
      "the writer's intent recorded",
    );
    // The writer's intent keeps new readers out.
    expect(await first.locks.tryAcquire(key, { mode: 'read' })).toBeNull();
    await Promise.all(readers.map((reader) => reader.release()));
    const written = await writer;
    expect(written.fence).toBeGreaterThan(Math.max(...readers.map((reader) => reader.fence)));
    await written.release();
    const reader = await first.locks.tryAcquire(key, { mode: 'read' });
    expect(reader).not.toBeNull();
    await reader?.release();
  });
});

/** Resolves once the client has loaded the slot map (`client.slots` is filled). */
async function ready(client: Cluster): Promise<void> {
  if (client.status !== 'ready') await new Promise((resolve) => client.once('ready', resolve));
}

/** Redis Cluster's hash slot of a key: CRC16 (XMODEM) of its hash tag, or of the whole key, mod 16384. */
function slotOf(key: string): number {
  const open = key.indexOf('{');
  if (open >= 0) {
    const close = key.indexOf('}', open + 1);
    if (close > open + 1) key = key.slice(open + 1, close);
  }
  let crc = 0;
  for (const byte of Buffer.from(key)) {
    crc ^= byte << 8;
    for (let bit = 0; bit < 8; bit++) crc = crc & 0x8000 ? ((crc << 1) ^ 0x1021) & 0xffff : (crc << 1) & 0xffff;
  }
  return crc % 16384;
}
