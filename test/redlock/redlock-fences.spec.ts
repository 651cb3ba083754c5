import { LockKeyNamer } from '../../lib/keys';
import { RedisLockNode } from '../../lib/stores/redis/redis-lock-node';
import { TokenOrder } from '../../lib/stores/redlock/token-order';
import { type RedisProcess, startRedisServers } from '../support/redis-server';
import { trackLockApps, uniqueKey } from '../support/lock-app';
import { quorumRecords } from '../support/permit-records';
import { type RedlockNodes, startRedlockNodes } from './helpers/redlock-nodes';

const namer = new LockKeyNamer('lock:');

/**
 * A fence counter far ahead of the clock every grant's fence is at least (a Redlock round's floor, this host's
 * clock in µs; a node's own script without one: the Redis server's, on this host too), as if other nodes' grants
 * had pushed it there: about 11 days ahead, a multiple of 3.
 */
function farAhead(): number {
  return Math.floor((Date.now() * 1_000 + 1e12) / 3) * 3;
}

/**
 * Each node keeps its own fence counter, so a grant made by another quorum than the last one would see
 * lower counters (a counter ahead of the clock: a grant's fence is at least the round's floor, a clock in µs).
 * The store returns the maximum over the granting quorum and writes it back to a quorum of
 * holders first; these grants rotate the quorum over all five nodes by pausing a different pair each time.
 */
describe('Redlock fences across moving quorums (5 real Redis nodes, SIGSTOP)', () => {
  let nodes: RedlockNodes;
  beforeAll(async () => {
    nodes = await startRedlockNodes(5);
  });
  afterAll(() => nodes?.stop());
  afterEach(() => nodes.servers.forEach((server) => server.resume()));
  const apps = trackLockApps();

  it('fences strictly increase when successive grants use different quorums; a raised counter is written back', async () => {
    const { locks } = await apps.start({ nodes: nodes.option, ttl: 2_000 });
    const key = uniqueKey('fenced');
    const { fenceKey } = namer.names(key);
    await (await locks.acquire(uniqueKey('warm-up'))).release();
    // Node 4's counter is far ahead of the others (as if it alone had seen many grants).
    const ahead = farAhead();
    await nodes.inspectors[4].set(fenceKey, String(ahead));

    /** The paused pair of each grant; the granting quorum is the other three. */
    const pausedPairs = [
      [0, 1], // quorum {2,3,4}: 4 is far ahead, so 2 and 3 must be raised
      [3, 4], // quorum {0,1,2}: only node 2 was raised
      [1, 2], // quorum {0,3,4}
      [0, 4], // quorum {1,2,3}
      [2, 3], // quorum {0,1,4}
      [1, 3], // quorum {0,2,4}
    ];
    const fences: number[] = [];
    for (const [index, pair] of pausedPairs.entries()) {
      nodes.servers.forEach((server, node) => (pair.includes(node) ? server.pause() : server.resume()));
      const lock = await locks.acquire(key, { wait: 0 });
      fences.push(lock.fence);
      const live = [0, 1, 2, 3, 4].filter((node) => !pair.includes(node));
      const counters = await Promise.all(live.map((node) => nodes.inspectors[node].get(fenceKey)));
      if (index === 0) {
        // The write-back: the two nodes behind were raised to the grant's fence before it was returned.
        expect(lock.fence).toBe(ahead + 1);
        expect(counters).toEqual([String(ahead + 1), String(ahead + 1), String(ahead + 1)]);
      }
      // A quorum of the holders has a counter at least the grant's fence.
      expect(counters.filter((counter) => Number(counter) >= lock.fence).length).toBeGreaterThanOrEqual(3);
      await lock.release();
    }
    const notRising = fences.filter((fence, i) => i > 0 && fence <= fences[i - 1]);
    expect({ fences, notRising }).toEqual({ fences, notRising: [] });
  });
});

/**
 * One node's permit fences by stride, deterministically: three nodes of a Redlock of 3 (residues 0, 1, 2) on
 * counters at the same value (ahead of the clock) hand out three different fences, each above the counter, and
 * leave the counter at their block's end. With INCR (before) all three gave the same value: two grants taking
 * their highest fence from different nodes then shared it. On a counter behind the clock, or none, the block is
 * the clock's: each fence is above the server's time in µs, still one of the node's own residue.
 */
describe('Redlock node: permit fences by stride (one real Redis)', () => {
  let server: RedisProcess;
  beforeAll(async () => {
    [server] = await startRedisServers(1);
  });
  afterAll(() => server?.stop());

  it('residues 0, 1, 2 on the same counter give 3 distinct fences above it; the counter ends at the block', async () => {
    const stores = [0, 1, 2].map(
      (residue) =>
        new RedisLockNode(server.url, {
          label: `nodes[${residue}]`,
          order: new TokenOrder(),
          permitFenceStride: { step: 3, residue },
        }),
    );
    try {
      const given: number[][] = [];
      const base = farAhead();
      for (const start of [base, base + 7, base + 8, base + 9, base + 1000].map(String)) {
        const row: number[] = [];
        for (const [residue, node] of stores.entries()) {
          const key = namer.names(uniqueKey(`stride-${start}-${residue}`));
          await server.command('SET', key.fenceKey, start);
          const reply = await node.acquire(
            { keys: [key], token: `token|${residue}`, ttl: 10_000, shape: { kind: 'read' } },
            2_000,
          );
          expect(reply).toMatchObject({ acquired: true });
          if (!reply.acquired) throw new Error('unreachable');
          row.push(reply.fences[0]);
          const block = Math.floor(Number(start) / 3) + 1;
          expect(reply.fences[0]).toBe(block * 3 + residue);
          expect(reply.fences[0]).toBeGreaterThan(Number(start));
          expect(Number(await server.command('GET', key.fenceKey))).toBe(block * 3 + 2);
        }
        given.push(row);
      }
      expect(given.map((row) => new Set(row).size)).toEqual([3, 3, 3, 3, 3]);
      for (const start of ['0', undefined]) {
        const row: number[] = [];
        for (const [residue, node] of stores.entries()) {
          const key = namer.names(uniqueKey(`stride-clock-${residue}`));
          if (start !== undefined) await server.command('SET', key.fenceKey, start);
          const before = Date.now() * 1000;
          const reply = await node.acquire(
            { keys: [key], token: `token|${residue}`, ttl: 10_000, shape: { kind: 'read' } },
            2_000,
          );
          if (!reply.acquired) throw new Error('not granted');
          expect(Number.isSafeInteger(reply.fences[0])).toBe(true);
          expect(reply.fences[0]).toBeGreaterThanOrEqual(before);
          expect(reply.fences[0] % 3).toBe(residue);
          expect(await server.command('GET', key.fenceKey)).toBe(String(reply.reaches?.[0] ?? reply.fences[0]));
          row.push(reply.fences[0]);
        }
        expect(new Set(row).size).toBe(3);
      }
      // Foreign data at the fence key (what INCR would refuse, or past 2^53) is refused, not overwritten.
      for (const foreign of ['1.5', ' 7', 'nan', '99999999999999999999']) {
        const key = namer.names(uniqueKey('stride-foreign'));
        await server.command('SET', key.fenceKey, foreign);
        await expect(
          stores[1].acquire({ keys: [key], token: 'token|foreign', ttl: 10_000, shape: { kind: 'read' } }, 2_000),
        ).rejects.toThrow("not this library's");
        expect(await server.command('GET', key.fenceKey)).toBe(foreign);
      }
    } finally {
      await Promise.all(stores.map((node) => node.close()));
    }
  });
});

/**
 * Permits and readers have several holders at once, each granted by its own quorum. A grant's fence is the
 * highest its quorum's nodes gave: with each node counting by INCR, two grants made at the same moment could
 * take the same highest value from different nodes. Each node now hands permits values of its own (blocks of
 * N, its place in the list modulo N). The repeats themselves show under the load of 3 processes
 * (test/reliability/primitives-history.spec.ts counted 16-55 per run before); these tests pin what the
 * blocks need besides: a quorum of nodes records the grant's fence, and the write-back still orders grants.
 */
describe('Redlock permit and reader fences (3 real Redis nodes)', () => {
  let nodes: RedlockNodes;
  beforeAll(async () => {
    nodes = await startRedlockNodes(3);
  });
  afterAll(() => nodes?.stop());
  afterEach(() => nodes.servers.forEach((server) => server.resume()));
  const apps = trackLockApps();

  // The quorum of each: a semaphore of limit 25 needs every one of the 3 nodes (floor(3·25/26) + 1), a reader 2.
  const shapes = [
    { what: 'permits', options: { limit: 25 }, quorum: 3 },
    { what: 'readers', options: { mode: 'read' as const }, quorum: 2 },
  ];
  it.each(shapes)(
    '$what granted at the same moment over two services get fences of their own; inspect reports each',
    async ({ options, quorum }) => {
      const first = await apps.start({ nodes: nodes.option });
      const second = await apps.start({ nodes: nodes.option });
      const key = uniqueKey('concurrent-permits');
      const held = await Promise.all(
        Array.from({ length: 24 }, (_, index) => (index % 2 ? first : second).locks.acquire(key, options)),
      );
      const fences = held.map((lock) => lock.fence).sort((a, b) => a - b);
      expect(new Set(fences).size).toBe(fences.length);
      // Each node recorded the value its own counter gave; the grant's fence is recorded on a quorum (sent after
      // the grant, not waited for), so that inspect, which reports the value a quorum records, finds it.
      for (const lock of held) await quorumRecords(nodes.servers, key, lock.token, lock.fence, quorum);
      expect((await first.locks.inspect(key))?.holders.map((holder) => holder.fence).sort((a, b) => a - b)).toEqual(
        fences,
      );
      // A grant asked for after those were returned (the 25th permit) is above every one of them.
      const later = await first.locks.acquire(key, options);
      expect(later.fence).toBeGreaterThan(fences[fences.length - 1]);
      await Promise.all([...held, later].map((lock) => lock.release()));
    },
  );

  it('a permit granted by a quorum behind another node still gets a fence above every earlier grant (the write-back)', async () => {
    const { locks } = await apps.start({ nodes: nodes.option });
    const key = uniqueKey('permit-moving-quorum');
    const { fenceKey } = namer.names(key);
    const ahead = farAhead();
    await nodes.inspectors[2].set(fenceKey, String(ahead));
    const fences: number[] = [];
    // Quorum {1, 2} (node 2 far ahead: node 1 is raised), then {0, 1}, then {0, 2}.
    for (const paused of [0, 2, 1]) {
      nodes.servers.forEach((server, node) => (node === paused ? server.pause() : server.resume()));
      const permit = await locks.acquire(key, { mode: 'read', wait: 0 });
      fences.push(permit.fence);
      await permit.release();
    }
    // Node 2's block after `ahead` (a multiple of 3) is ahead+3 to ahead+5: its value is ahead+5 (≡ 2 mod 3); node 1,
    // raised to it, goes on from there.
    expect(fences[0]).toBe(ahead + 5);
    expect(fences.filter((fence, i) => i > 0 && fence <= fences[i - 1])).toEqual([]);
  });

  it('a quorum whose counters agree gives one fence: a mutex is granted with no write-back', async () => {
    const raise = vi.spyOn(RedisLockNode.prototype, 'raiseFences');
    try {
      const { locks } = await apps.start({ nodes: nodes.option });
      const key = uniqueKey('agreed');
      const fences: number[] = [];
      for (let grant = 0; grant < 20; grant++) {
        // The same key each time (counters agree) and a fresh key (none yet).
        const again = await locks.acquire(key);
        fences.push(again.fence);
        await again.release();
        await (await locks.acquire(uniqueKey('fresh'))).release();
      }
      expect(fences.filter((fence, i) => i > 0 && fence <= fences[i - 1])).toEqual([]);
      // (A writer after readers may need one: the readers' strides left the nodes' counters apart.)
      expect(raise).not.toHaveBeenCalled();
    } finally {
      raise.mockRestore();
    }
  });

  it('permits too: nodes whose counters agree take one block, and a permit is granted with no write-back', async () => {
    const raise = vi.spyOn(RedisLockNode.prototype, 'raiseFences');
    try {
      const { locks } = await apps.start({ nodes: nodes.option });
      const key = uniqueKey('agreed-permits');
      const fences: number[] = [];
      for (let grant = 0; grant < 20; grant++) {
        const permit = await locks.acquire(key, { limit: 2 });
        fences.push(permit.fence);
        await permit.release();
        await (await locks.acquire(uniqueKey('fresh-permits'), { limit: 2 })).release();
      }
      expect(fences.filter((fence, i) => i > 0 && fence <= fences[i - 1])).toEqual([]);
      expect(raise).not.toHaveBeenCalled();
    } finally {
      raise.mockRestore();
    }
  });
});
