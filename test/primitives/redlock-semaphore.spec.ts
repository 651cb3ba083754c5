import { LockLostError } from '../../lib';
import { rejectionOf } from '../core/helpers/timing';
import { trackLockApps, uniqueKey } from '../support/lock-app';
import { quorumRecords } from '../support/permit-records';
import { type RedisProcess, startRedisServers } from '../support/redis-server';

/** Removes the member of `token` from the holders' set of `key` on one node (that node lost the permit). */
async function dropPermitOn(server: RedisProcess, key: string, token: string): Promise<void> {
  const lockKey = `lock:{${key}}`;
  const members = (await server.command('ZRANGE', lockKey, '0', '-1')) as string[];
  const member = members.find((value) => value.startsWith(`${token}|`));
  if (!member) throw new Error(`no permit of ${token} on ${server.url}`);
  expect(Number(await server.command('ZREM', lockKey, member))).toBe(1);
}

/**
 * Redlock semaphores: a permit needs floor(N·n/(n+1)) + 1 nodes, not a majority. With 3 nodes and limit 2
 * a majority quorum admits 3 holders once each node lost a different permit (a restart without
 * persistence): A on {0,1}, B on {1,2}, and a newcomer C on {0,2}.
 */
describe('Redlock semaphore quorum (3 nodes, limit 2)', () => {
  let servers: RedisProcess[];
  beforeAll(async () => {
    servers = await startRedisServers(3);
  });
  afterAll(() => Promise.all(servers.map((server) => server.stop())));
  const apps = trackLockApps();

  it('permits spread so that a majority would admit a third holder: the third is refused, and the others lose theirs', async () => {
    const { locks } = await apps.start({ nodes: servers.map((server) => server.url) });
    const key = uniqueKey('redlock-semaphore');
    const options = { limit: 2, ttl: 20_000, autoExtend: false };
    const a = await locks.acquire(key, options);
    const b = await locks.acquire(key, options);
    // Node 2 forgets A's permit, node 0 forgets B's: each node now has one free slot, and A and B each
    // still hold a majority (2 of 3) of the nodes.
    await dropPermitOn(servers[2], key, a.token);
    await dropPermitOn(servers[0], key, b.token);

    const third = await locks.tryAcquire(key, options);
    expect(third).toBeNull();
    // A and B no longer hold the quorum of 3 their permits need: their renewal says so.
    for (const lock of [a, b]) expect(await rejectionOf(lock.extend())).toBeInstanceOf(LockLostError);
    expect(a.signal.aborted && b.signal.aborted).toBe(true);
    // What inspect reports as held agrees: nobody holds a quorum of the nodes.
    expect(await locks.inspect(key)).toBeNull();
  });

  it('with every node up, limit 2 admits exactly 2 and the permits sit on all 3 nodes', async () => {
    const { locks } = await apps.start({ nodes: servers.map((server) => server.url) });
    const key = uniqueKey('redlock-semaphore-full');
    const held = [await locks.acquire(key, { limit: 2 }), await locks.acquire(key, { limit: 2 })];
    expect(await locks.tryAcquire(key, { limit: 2 })).toBeNull();
    for (const server of servers) expect(Number(await server.command('ZCARD', `lock:{${key}}`))).toBe(2);
    // Every key the scripts touch for this lock shares its hash tag (one Cluster slot).
    const touched = (await servers[0].command('KEYS', `*${key}*`)) as string[];
    expect(touched.sort()).toEqual([`lock:{${key}}`, `lock:{${key}}:fence`, `lock:{${key}}:permits`]);
    await Promise.all(held.map((lock) => lock.release()));
  });
  it('a permit is released with one node down (it no longer holds the 3 nodes it needs), and the key is free again', async () => {
    const { locks } = await apps.start({ nodes: servers.map((server) => server.url), ttl: 2_000 });
    const key = uniqueKey('permit-node-down');
    const permit = await locks.acquire(key, { limit: 2 });
    servers[2].pause();
    try {
      // Not LockUnavailableError: the live nodes dropped the permit.
      await expect(permit.release()).resolves.toBe(true);
      expect(Number(await servers[0].command('ZCARD', `lock:{${key}}`))).toBe(0);
    } finally {
      servers[2].resume();
    }
  });

  it("inspect reports each permit's own fence (the value a quorum records), not a higher one a single node recorded", async () => {
    const { locks } = await apps.start({ nodes: servers.map((server) => server.url) });
    const key = uniqueKey('permit-fence');
    // limit 1 needs 2 of the 3 nodes. Each node records the value its own counter gave (by stride, one of them
    // the grant's), and the grant's is recorded on a quorum; the third node (granting after the quorum was in,
    // say) may record more than the grant's: made so by hand.
    const permit = await locks.acquire(key, { limit: 1 });
    const records = await quorumRecords(servers, key, permit.token, permit.fence, 2);
    const outside = records.findIndex((record) => record.fence !== permit.fence);
    expect(outside).toBeGreaterThanOrEqual(0);
    const { member } = records[outside];
    expect(member.startsWith(`${permit.token}|`)).toBe(true);
    expect(
      Number(await servers[outside].command('HSET', `lock:{${key}}:permits`, member, String(permit.fence + 10))),
    ).toBe(0);
    // Before: the highest any node recorded (fence + 10).
    expect((await locks.inspect(key))?.holders.map((holder) => holder.fence)).toEqual([permit.fence]);
    await permit.release();
  });
});
