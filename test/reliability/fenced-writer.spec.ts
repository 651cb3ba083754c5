import Redis, { Cluster } from 'ioredis';
import { FencedWriteRejectedError, FencedWriter, type Lock, LockOptionsError, lastFenceKeyOf } from '../../lib';
import { connected, trackLockApps, uniqueKey } from '../support/lock-app';
import { startRedisCluster, type RedisClusterProcess } from '../support/redis-cluster';
import { startRedis, type RedisProcess } from '../support/redis-server';

/** The helper of lib/fencing on a real Redis, then on a real Redis Cluster. */
describe('FencedWriter (one Redis)', () => {
  let server: RedisProcess;
  let client: Redis;
  let writer: FencedWriter;
  const apps = trackLockApps();

  beforeAll(async () => {
    server = await startRedis();
    client = new Redis(server.url);
    writer = new FencedWriter(client);
  });
  afterAll(async () => {
    client?.disconnect();
    await server?.stop();
  });

  it('the first write is accepted and records its fence next to the resource', async () => {
    const key = uniqueKey('resource');
    await writer.set(key, 'v7', 7);
    expect(await client.get(key)).toBe('v7');
    expect(await client.get(lastFenceKeyOf(key))).toBe('7');
  });

  it('a newer fence is accepted; an older one, or an equal bare number (its grant unknown), is refused', async () => {
    const key = uniqueKey('resource');
    await writer.set(key, 'a', 5);
    await writer.set(key, 'b', 9);
    expect(await client.get(key)).toBe('b');

    const refused = await writer.set(key, 'stale', 8).then(
      () => undefined,
      (error: unknown) => error,
    );
    expect(refused).toBeInstanceOf(FencedWriteRejectedError);
    expect(refused).toMatchObject({ key, fence: 8, lastFence: 9 });
    expect(await writer.trySet(key, 'stale', 1)).toBe(false);
    const equal = await writer.set(key, 'same', 9).then(
      () => undefined,
      (error: unknown) => error,
    );
    expect(equal).toBeInstanceOf(FencedWriteRejectedError);
    expect(equal).toMatchObject({ key, fence: 9, lastFence: 9 });
    // Neither the value nor the last fence moved.
    expect(await client.get(key)).toBe('b');
    expect(await client.get(lastFenceKeyOf(key))).toBe('9');
    expect(await writer.trySet(key, 'd', 10)).toBe(true);
    expect(await client.get(key)).toBe('d');
  });

  it("an equal fence is accepted from the grant that wrote with it (a holder's repeat write) and refused from another grant", async () => {
    const { locks } = await apps.start({ redis: server.url });
    const key = uniqueKey('resource');
    const lock = await locks.acquire(uniqueKey('guard'));
    await writer.set(key, 'first', lock);
    await writer.set(key, 'again', lock);
    expect(await client.get(key)).toBe('again');
    // Another grant carrying the same fence (what a clock stepped back across a data loss could give): refused.
    const other = {
      keys: lock.keys,
      fence: lock.fence,
      fences: lock.fences,
      token: 'another grant',
    } as unknown as Lock;
    await expect(writer.set(key, 'other grant', other)).rejects.toBeInstanceOf(FencedWriteRejectedError);
    expect(await writer.trySet(key, 'bare number', lock.fence)).toBe(false);
    expect(await client.get(key)).toBe('again');
    // The grant is recorded as a digest of its token, never the token itself.
    const recorded = String(await client.get(lastFenceKeyOf(key)));
    expect(recorded).toMatch(new RegExp(`^${lock.fence}:[0-9a-f]{32}$`));
    expect(recorded).not.toContain(lock.token);
    await writer.set(key, 'still the holder', lock);
    expect(await client.get(key)).toBe('still the holder');
    await lock.release();
  });

  it('concurrent writers in any order: the greatest fence wins and no older write lands after it', async () => {
    const key = uniqueKey('resource');
    const fences = Array.from({ length: 50 }, (_, i) => i + 1).sort(() => Math.random() - 0.5);
    const accepted: number[] = [];
    await Promise.all(
      fences.map(async (fence) => {
        if (await writer.trySet(key, `v${fence}`, fence)) accepted.push(fence);
      }),
    );
    expect(await client.get(key)).toBe('v50');
    expect(await client.get(lastFenceKeyOf(key))).toBe('50');
    // The accepted writes, in the order Redis ran them, only ever went forward.
    expect(accepted).toEqual([...accepted].sort((a, b) => a - b));
    expect(accepted).toContain(50);
  });

  it('takes the fence from a Lock: a holder whose lease expired is refused once the next holder wrote', async () => {
    const { locks } = await apps.start({ redis: server.url });
    await connected(locks);
    const lockKey = uniqueKey('guard');
    const resource = uniqueKey('resource');
    const first = await locks.acquire(lockKey, { ttl: 200, autoExtend: false });
    await writer.set(resource, 'first', first);
    await new Promise((resolve) => setTimeout(resolve, 300));
    const second = await locks.acquire(lockKey, { wait: 0 });
    expect(second.fence).toBeGreaterThan(first.fence);
    await writer.set(resource, 'second', second);

    await expect(writer.set(resource, 'first, late', first)).rejects.toBeInstanceOf(FencedWriteRejectedError);
    expect(await client.get(resource)).toBe('second');
    await second.release();
  });

  it('picks the right token of a multi-key lock with lockKey, and refuses a key the lock does not hold', async () => {
    const { locks } = await apps.start({ redis: server.url });
    const [a, b] = [uniqueKey('a'), uniqueKey('b')];
    await locks.withLock([a, b], async (lock) => {
      const resource = uniqueKey('resource');
      await writer.set(resource, 'x', lock, { lockKey: b });
      expect(await client.get(lastFenceKeyOf(resource))).toMatch(new RegExp(`^${lock.fences[b]}:[0-9a-f]{32}$`));
      await expect(writer.set(resource, 'y', lock, { lockKey: 'not-held' })).rejects.toBeInstanceOf(LockOptionsError);
    });
  });

  it("a reentrant lock's write for a key it borrowed counts as the outer grant's, whose fence it carries", async () => {
    const { locks } = await apps.start({ redis: server.url });
    const [a, b] = [uniqueKey('a'), uniqueKey('b')];
    const resource = uniqueKey('resource');
    await locks.withLock(
      a,
      async (outer) => {
        await writer.set(resource, 'outer', outer);
        await locks.withLock(
          [a, b],
          async (inner) => {
            // The inner handle borrows `a` from the outer grant (same fence) and holds `b` under its own.
            expect(inner.fences[a]).toBe(outer.fence);
            await writer.set(resource, 'inner', inner, { lockKey: a });
          },
          { reentrant: true },
        );
      },
      { reentrant: true },
    );
    expect(await client.get(resource)).toBe('inner');
  });

  it('ttl expires the value; the last-fence key never expires (a late writer is refused after expiry too)', async () => {
    const key = uniqueKey('resource');
    await writer.set(key, 'v', 3, { ttl: 60_000 });
    expect(await client.pttl(key)).toBeGreaterThan(50_000);
    expect(await client.pttl(lastFenceKeyOf(key))).toBe(-1);
    await client.del(key);
    expect(await writer.trySet(key, 'late', 2)).toBe(false);
    expect(await client.exists(key)).toBe(0);
  });

  it('a last-fence key holding foreign data is a LockOptionsError, and both keys are left as they were', async () => {
    const key = uniqueKey('resource');
    await client.set(key, 'original');
    await client.rpush(lastFenceKeyOf(key), 'not', 'a', 'fence');
    await expect(writer.set(key, 'v', 1)).rejects.toBeInstanceOf(LockOptionsError);
    const text = uniqueKey('resource');
    await client.set(lastFenceKeyOf(text), 'twelve');
    await expect(writer.set(text, 'v', 1)).rejects.toBeInstanceOf(LockOptionsError);
    expect(await client.get(key)).toBe('original');
    expect(await client.lrange(lastFenceKeyOf(key), 0, -1)).toEqual(['not', 'a', 'fence']);
    expect(await client.exists(text)).toBe(0);
    expect(await client.get(lastFenceKeyOf(text))).toBe('twelve');
  });

  it.each<[string, () => Promise<unknown>]>([
    ['a negative fence', () => writer.set(uniqueKey('r'), 'v', -1)],
    ['a fractional fence', () => writer.set(uniqueKey('r'), 'v', 1.5)],
    ['NaN as the fence', () => writer.set(uniqueKey('r'), 'v', NaN)],
    ['a string as the fence', () => writer.set(uniqueKey('r'), 'v', '3' as unknown as number)],
    ['an empty key', () => writer.set('', 'v', 1)],
    ['an object as the value', () => writer.set(uniqueKey('r'), {} as unknown as string, 1)],
    ['a zero ttl', () => writer.set(uniqueKey('r'), 'v', 1, { ttl: 0 })],
    ['the resource as its own fence key', () => writer.set('same', 'v', 1, { fenceKey: 'same' })],
    ['a key whose fence key cannot share its slot', () => writer.set('a}b', 'v', 1)],
  ])('%s is a LockOptionsError and writes nothing', async (_case, write) => {
    const before = await client.dbsize();
    await expect(write()).rejects.toBeInstanceOf(LockOptionsError);
    expect(await client.dbsize()).toBe(before);
  });
});

describe('lastFenceKeyOf', () => {
  it.each([
    ['{account:1}:balance', '{account:1}:balance:last-fence'],
    ['balance:1', '{balance:1}:last-fence'],
    ['a{b', '{a{b}:last-fence'],
  ])('%s → %s', (key, expected) => {
    expect(lastFenceKeyOf(key)).toBe(expected);
  });
});

describe('FencedWriter (Redis Cluster)', () => {
  let cluster: RedisClusterProcess;
  let client: Cluster;

  beforeAll(async () => {
    cluster = await startRedisCluster(3);
    client = new Cluster([...cluster.startupNodes]);
  });
  afterAll(async () => {
    await client?.quit().catch(() => undefined);
    await cluster?.stop();
  });

  it('keys with and without hash tags: the fence key lands in the resource slot and fencing works', async () => {
    const writer = new FencedWriter(client);
    for (const key of [`{${uniqueKey('account')}}:balance`, uniqueKey('plain'), `orders:{${uniqueKey('tenant')}}:42`]) {
      const [resourceSlot, fenceSlot] = await Promise.all([
        client.cluster('KEYSLOT', key),
        client.cluster('KEYSLOT', lastFenceKeyOf(key)),
      ]);
      expect([key, fenceSlot]).toEqual([key, resourceSlot]);
      await writer.set(key, 'new', 4);
      expect(await writer.trySet(key, 'old', 3)).toBe(false);
      expect(await client.get(key)).toBe('new');
    }
  });

  it('a fenceKey in another slot is a LockOptionsError, not a raw CROSSSLOT reply', async () => {
    const writer = new FencedWriter(client);
    const key = `{${uniqueKey('a')}}:x`;
    await expect(writer.set(key, 'v', 1, { fenceKey: `{${uniqueKey('b')}}:fence` })).rejects.toBeInstanceOf(
      LockOptionsError,
    );
    expect(await client.exists(key)).toBe(0);
  });
});
