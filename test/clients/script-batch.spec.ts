import { Logger } from '@nestjs/common';
import { type LockClient, createLockClient, lockScript } from '../../lib/stores/clients';
import { CommandTimeoutError } from '../../lib/errors/command-timeout.error';
import { ACQUIRE, PERMIT_ACQUIRE } from '../../lib/stores/redis/scripts';
import { eventually } from '../support/eventually';
import { startMasterWithReplica } from '../support/redis-sentinel';
import { type RedisProcess, startRedis } from '../support/redis-server';
import { commandStats, statsDelta } from '../support/redis-stats';
import { type ScriptCallCount, countScriptCalls } from '../support/script-calls';

const SET = lockScript('nestLockTestBatchSet', "redis.call('SET', KEYS[1], ARGV[1]) return ARGV[1]");
const GET = lockScript('nestLockTestBatchGet', "return redis.call('GET', KEYS[1])");
/** INCR: the server's own error (not an integer) when the key holds text. */
const INCR = lockScript('nestLockTestBatchIncr', "return redis.call('INCR', KEYS[1])");
/** A Lua runtime error (not one a command raised). */
const BROKEN = lockScript('nestLockTestBatchBroken', 'local missing = nil; return missing.field');
/** Returns nothing: nil in Lua (a GET of a missing key is false there, not nil). */
const NOTHING = lockScript('nestLockTestBatchNothing', "redis.call('SET', KEYS[1], 'nothing')");
/** Replies of every kind, nested. */
const SHAPES = lockScript('nestLockTestBatchShapes', "return {1, 'two', {3, {ok = 'FOUR'}}, false}");

const logger = new Logger('ScriptBatchTest');

/** Runs `calls` while counting the script calls written to `port`: the count stops however `calls` ends. */
async function counting<T>(port: number, calls: () => Promise<T>): Promise<{ result: T; count: ScriptCallCount }> {
  const count = countScriptCalls([port]);
  try {
    return { result: await calls(), count };
  } finally {
    count.stop();
  }
}

/** Whether the adapter sends batches on its connection: read from its ready check's INFO (white box). */
function batchesOn(client: LockClient): boolean {
  return (client as unknown as { tickBatch?: { batches: boolean } }).tickBatch?.batches === true;
}

let counter = 0;
const freshKey = (label: string): string => `batch:${label}:${process.pid}:${++counter}`;

/**
 * The ioredis adapter on a connection of its own sends the script calls of one tick after the first as one
 * call of a batch script (see script-batch.ts): against a real redis-server, each call must still get its
 * own reply or error, in the order the calls were made, ahead of every command sent after them.
 */
describe('script calls of one tick, batched (ioredis, a connection of the module)', () => {
  let server: RedisProcess;
  let client: LockClient;
  beforeAll(async () => {
    server = await startRedis();
  });
  beforeEach(async () => {
    client = createLockClient(server.url, { label: 'batch test', logger, writeFirstWhenIdle: true });
    // Connected, the scripts sent, the server known to take batches: what a tick meets on a connection in use.
    await client.runScript(GET, [freshKey('warm-up')], []);
    expect(batchesOn(client)).toBe(true);
  });
  afterEach(() => client.close());
  afterAll(() => server?.stop());

  it('100 calls in one tick: each its own reply, in few commands (INFO commandstats), every call counted', async () => {
    const keys = Array.from({ length: 100 }, () => freshKey('many'));
    const count = countScriptCalls([server.port]);
    const before = await commandStats(server.url);
    let replies: unknown[];
    try {
      replies = await Promise.all(keys.map((key, i) => client.runScript(SET, [key], [`value-${i}`])));
    } finally {
      count.stop();
    }
    const ran = statsDelta(before, await commandStats(server.url));
    expect(replies).toEqual(keys.map((_, i) => `value-${i}`));
    expect(await Promise.all(keys.map((key) => server.command('GET', key)))).toEqual(keys.map((_, i) => `value-${i}`));
    // The first call alone, then batches of at most 32 (the first batch loads the batch script: EVAL).
    expect((ran.evalsha ?? 0) + (ran.eval ?? 0)).toBeLessThanOrEqual(6);
    expect(ran.set).toBe(100);
    expect(count.calls).toBe(100);
    expect(count.commands).toBe((ran.evalsha ?? 0) + (ran.eval ?? 0));
  });

  it("grants of one batch read the server's clock once: each fence at least that clock's millisecond", async () => {
    const keys = Array.from({ length: 40 }, () => freshKey('grant'));
    const before = await commandStats(server.url);
    const floor = Date.now() * 1000;
    const fences = (await Promise.all(
      keys.map((key) => client.runScript(ACQUIRE, [key, `${key}:fence`, `${key}:awaited`], ['token', 10_000])),
    )) as number[];
    const ran = statsDelta(before, await commandStats(server.url));
    expect(ran.incr).toBe(40);
    // One TIME per command: the first call alone, then one per batch.
    expect(ran.time).toBe((ran.evalsha ?? 0) + (ran.eval ?? 0));
    expect(ran.time).toBeLessThan(40);
    for (const fence of fences) {
      expect(Number.isSafeInteger(fence)).toBe(true);
      expect(fence).toBeGreaterThanOrEqual(floor);
    }
  });

  it("a permit's grant reads the server's clock once, for its holder's expiry and for its fence", async () => {
    const key = freshKey('permit');
    const before = await commandStats(server.url);
    const reply = (await client.runScript(
      PERMIT_ACQUIRE,
      [key, `${key}:fence`, `${key}:permits`, `${key}:writer`, `${key}:awaited`],
      ['holder|instance', 10_000, 'semaphore:2', 2, 1],
    )) as number[];
    const ran = statsDelta(before, await commandStats(server.url));
    expect(reply[0]).toBe(1);
    expect(ran.time).toBe(1);
  });

  it('calls of different scripts run in the order they were made: each GET sees the SET made just before it', async () => {
    const key = freshKey('order');
    const calls: Promise<unknown>[] = [];
    for (let i = 0; i < 60; i++) {
      calls.push(client.runScript(SET, [key], [String(i)]));
      calls.push(client.runScript(GET, [key], []));
    }
    const replies = await Promise.all(calls);
    for (let i = 0; i < 60; i++) expect(replies[2 * i + 1], `GET after SET ${i}`).toBe(String(i));
  });

  it("one call's error rejects that call only, with the server's message; its neighbours are answered", async () => {
    const text = freshKey('text');
    const number = freshKey('number');
    await server.command('SET', text, 'not a number');
    const outcomes = await Promise.allSettled([
      client.runScript(INCR, [number], []),
      client.runScript(INCR, [number], []),
      client.runScript(INCR, [text], []),
      client.runScript(BROKEN, [number], []),
      client.runScript(INCR, [number], []),
    ]);
    expect(outcomes.map((outcome) => outcome.status)).toEqual([
      'fulfilled',
      'fulfilled',
      'rejected',
      'rejected',
      'fulfilled',
    ]);
    expect((outcomes[4] as PromiseFulfilledResult<unknown>).value).toBe(3);
    const integerError = (outcomes[2] as PromiseRejectedResult).reason as Error;
    expect(integerError).toBeInstanceOf(Error);
    expect(integerError.message).toMatch(/^ERR value is not an integer/);
    expect(((outcomes[3] as PromiseRejectedResult).reason as Error).message).toMatch(/^ERR .*attempt to index/);
  });

  it('a nil reply and nested replies come back as they do alone, and do not cut the batch short', async () => {
    const missing = freshKey('missing');
    const alone = await client.runScript(SHAPES, [missing], []);
    const nothingAlone = await client.runScript(NOTHING, [freshKey('nothing')], []);
    const [first, missingValue, nothing, shapes, last] = await Promise.all([
      client.runScript(GET, [missing], []),
      client.runScript(GET, [missing], []),
      client.runScript(NOTHING, [freshKey('nothing')], []),
      client.runScript(SHAPES, [missing], []),
      client.runScript(SET, [missing], ['set']),
    ]);
    expect(nothingAlone).toBeNull();
    expect(first).toBeNull();
    expect(missingValue).toBeNull();
    expect(nothing).toBeNull();
    expect(shapes).toEqual(alone);
    expect(shapes).toEqual([1, 'two', [3, 'FOUR'], null]);
    expect(last).toBe('set');
  });

  it('EXISTS, PING and close() go after the calls queued before them', async () => {
    const keys = Array.from({ length: 10 }, () => freshKey('overtake'));
    const sets = keys.map((key) => client.runScript(SET, [key], ['x']));
    const exists = client.exists(keys[9]);
    const more = keys.map((key) => client.runScript(SET, [`${key}:after`], ['y']));
    const closed = client.close();
    expect(await exists).toBe(1);
    expect(await Promise.all([...sets, ...more])).toEqual([...keys.map(() => 'x'), ...keys.map(() => 'y')]);
    await closed;
    expect(await server.command('GET', `${keys[9]}:after`)).toBe('y');
  });

  it('a script made after earlier batches is batched too (a new batch script), in order', async () => {
    const key = freshKey('late');
    await Promise.all([client.runScript(GET, [key], []), client.runScript(GET, [key], [])]);
    const late = lockScript(
      `nestLockTestBatchLate${counter}`,
      "redis.call('APPEND', KEYS[1], ARGV[1]) return redis.call('GET', KEYS[1])",
    );
    const replies = await Promise.all([
      client.runScript(SET, [key], ['a']),
      client.runScript(late, [key], ['b']),
      client.runScript(GET, [key], []),
      client.runScript(late, [key], ['c']),
      client.runScript(GET, [key], []),
    ]);
    expect(replies).toEqual(['a', 'ab', 'ab', 'abc', 'abc']);
  });

  it('after SCRIPT FLUSH, a batch answered NOSCRIPT is sent again call by call, in order', async () => {
    const key = freshKey('flushed');
    // Both scripts and a batch first, so the server knows every script (each sent in full on its first use on
    // the connection) before it forgets them.
    await Promise.all([
      client.runScript(SET, [key], ['0']),
      client.runScript(GET, [key], []),
      client.runScript(GET, [key], []),
    ]);
    const count = countScriptCalls([server.port]);
    let replies: unknown[];
    try {
      await server.command('SCRIPT', 'FLUSH');
      replies = await Promise.all([
        client.runScript(SET, [key], ['1']),
        client.runScript(GET, [key], []),
        client.runScript(SET, [key], ['2']),
        client.runScript(GET, [key], []),
      ]);
    } finally {
      count.stop();
    }
    expect(replies).toEqual(['1', '1', '2', '2']);
    // The first call alone and the batch of three, each answered NOSCRIPT, then the four calls each on its own.
    expect(count.commands).toBe(6);
    expect(count.calls).toBe(8);
    // And the next batch loads the batch script again.
    expect(await Promise.all([client.runScript(GET, [key], []), client.runScript(GET, [key], [])])).toEqual(['2', '2']);
  });

  it('a server that does not answer: every queued call rejects at its own deadline, none hangs', async () => {
    const key = freshKey('paused');
    server.pause();
    try {
      const outcomes = await Promise.allSettled([
        client.runScript(GET, [key], [], 150),
        client.runScript(GET, [key], [], 150),
        client.runScript(GET, [key], [], 300),
      ]);
      for (const outcome of outcomes) {
        expect(outcome.status).toBe('rejected');
        expect((outcome as PromiseRejectedResult).reason).toBeInstanceOf(CommandTimeoutError);
      }
      expect(
        outcomes.map((outcome) => ((outcome as PromiseRejectedResult).reason as CommandTimeoutError).timeoutMs),
      ).toEqual([150, 150, 300]);
    } finally {
      server.resume();
    }
    expect(await client.runScript(GET, [key], [], 5_000)).toBeNull();
  });
  it("a tick's first call on an idle connection is written at once, not at the tick's end; behind an unanswered call, or on a Redlock node, it waits for the tick's end", async () => {
    interface Socket {
      readonly writableCorked: number;
      readonly writableLength: number;
    }
    const socketOf = (lockClient: LockClient): Socket =>
      (lockClient as unknown as { connection: { stream: Socket } }).connection.stream;
    const first = client.runScript(SET, [freshKey('idle')], ['first']);
    // Nothing was in flight: handed to the kernel now (nothing left in the socket's buffer), not held in a cork.
    const afterFirst = { ...pick(socketOf(client)) };
    const later = [
      client.runScript(SET, [freshKey('idle')], ['second']),
      client.runScript(SET, [freshKey('idle')], ['third']),
    ];
    expect(await Promise.all([first, ...later])).toEqual(['first', 'second', 'third']);
    expect(afterFirst).toEqual({ writableCorked: 0, writableLength: 0 });

    // A tick whose first call finds another still unanswered: corked, to go out with the tick's later calls.
    const unanswered = client.runScript(SET, [freshKey('busy')], ['unanswered']);
    // The tick ends; no reply can be read before the event loop polls again.
    await new Promise<void>((resolve) => process.nextTick(resolve));
    const next = client.runScript(SET, [freshKey('busy')], ['next']);
    const behindUnanswered = pick(socketOf(client));
    expect(await Promise.all([unanswered, next])).toEqual(['unanswered', 'next']);
    expect(behindUnanswered.writableCorked).toBe(1);
    expect(behindUnanswered.writableLength).toBeGreaterThan(0);

    const redlockNode = createLockClient(server.url, { label: 'redlock node', logger, writeFirstWhenIdle: false });
    try {
      await redlockNode.runScript(GET, [freshKey('warm-up')], []);
      const alone = redlockNode.runScript(SET, [freshKey('node')], ['alone']);
      const onNode = pick(socketOf(redlockNode));
      expect(await alone).toBe('alone');
      expect(onNode.writableCorked).toBe(1);
      expect(onNode.writableLength).toBeGreaterThan(0);
    } finally {
      await redlockNode.close();
    }

    function pick(socket: Socket): Socket {
      return { writableCorked: socket.writableCorked, writableLength: socket.writableLength };
    }
  });
});

/** A Redis in cluster mode holding every slot: it refuses a script whose keys span slots (CROSSSLOT). */
async function startClusterModeNode(): Promise<RedisProcess> {
  const node = await startRedis({ args: ['--cluster-enabled', 'yes', '--cluster-config-file', '{dir}/nodes.conf'] });
  await node.command('CLUSTER', 'ADDSLOTSRANGE', '0', '16383');
  await eventually(
    async () => String(await node.command('CLUSTER', 'INFO')).includes('cluster_state:ok'),
    10_000,
    'cluster ok',
  );
  return node;
}

/** After a first call (the connection ready, its ready check's INFO read), the client sends no batches. */
async function toldNoBatches(client: LockClient): Promise<void> {
  await client.runScript(GET, ['{a}first'], []);
  expect(batchesOn(client)).toBe(false);
}

describe('where batches do not fit', () => {
  it('a Redis in cluster mode, reached by a plain client: no batches (keys of many slots), every call on its own', async () => {
    const node = await startClusterModeNode();
    const client = createLockClient(node.url, { label: 'cluster-mode node', logger, writeFirstWhenIdle: true });
    try {
      await toldNoBatches(client);
      // {a}, {b} and {c} hash to three slots: one batch of them would be refused (CROSSSLOT).
      const { result: replies, count } = await counting(node.port, () =>
        Promise.all(['{a}', '{b}', '{c}'].map((tag, i) => client.runScript(SET, [`${tag}key`], [String(i)]))),
      );
      expect(replies).toEqual(['0', '1', '2']);
      expect(count.calls).toBe(3);
      expect(count.commands).toBe(3);
    } finally {
      await client.close();
      await node.stop();
    }
  });

  it('a batch refused with CROSSSLOT: each call goes again on its own, answered; no batches after that', async () => {
    const node = await startClusterModeNode();
    const warnings: string[] = [];
    const warning = vi
      .spyOn(Logger.prototype, 'warn')
      .mockImplementation((message: unknown) => void warnings.push(String(message)));
    const client = createLockClient(node.url, { label: 'sharding server', logger, writeFirstWhenIdle: true });
    try {
      await toldNoBatches(client);
      // A server that said it was a standalone Redis but shards after all (a proxy): told here by hand.
      (client as unknown as { tickBatch: { batches: boolean } }).tickBatch.batches = true;
      const count = countScriptCalls([node.port]);
      try {
        expect(
          await Promise.all(['{a}', '{b}', '{c}'].map((tag, i) => client.runScript(SET, [`${tag}key`], [String(i)]))),
        ).toEqual(['0', '1', '2']);
        // The first call alone, the refused batch of two, and those two again, each alone.
        expect(count.commands).toBe(4);
        expect(await Promise.all(['{a}', '{b}', '{c}'].map((tag) => client.runScript(GET, [`${tag}key`], [])))).toEqual(
          ['0', '1', '2'],
        );
        expect(count.commands).toBe(7);
      } finally {
        count.stop();
      }
      expect(warnings.filter((message) => message.includes('CROSSSLOT'))).toHaveLength(1);
    } finally {
      warning.mockRestore();
      await client.close();
      await node.stop();
    }
  });

  it('a read-only replica (a master demoted by a failover): every write, batched or alone, fails with READONLY and writes nothing', async () => {
    const replicated = await startMasterWithReplica();
    const client = createLockClient(
      { host: replicated.replica.host, port: replicated.replica.port },
      { label: 'demoted master', logger, writeFirstWhenIdle: true },
    );
    try {
      await client.runScript(GET, ['warm-up'], []);
      expect(batchesOn(client)).toBe(true);
      const keys = ['a', 'b', 'c'].map((label) => freshKey(label));
      const outcomes = await Promise.allSettled(keys.map((key) => client.runScript(SET, [key], ['x'])));
      for (const outcome of outcomes) {
        expect(outcome.status).toBe('rejected');
        expect(((outcome as PromiseRejectedResult).reason as Error).message).toMatch(/^READONLY/);
      }
      expect(await Promise.all(keys.map((key) => replicated.master.command('EXISTS', key)))).toEqual([0, 0, 0]);
    } finally {
      await client.close();
      await replicated.stop();
    }
  });

  it('no ready check (enableReadyCheck: false): the server is not known to be a standalone Redis, so no batches', async () => {
    const server = await startRedis();
    const client = createLockClient(
      { host: server.host, port: server.port, enableReadyCheck: false },
      { label: 'no ready check', logger, writeFirstWhenIdle: true },
    );
    try {
      await client.runScript(GET, ['warm-up'], []);
      expect(batchesOn(client)).toBe(false);
      const { result: replies, count } = await counting(server.port, () =>
        Promise.all(['a', 'b', 'c'].map((key) => client.runScript(SET, [freshKey(key)], [key]))),
      );
      expect(replies).toEqual(['a', 'b', 'c']);
      expect(count.commands).toBe(3);
    } finally {
      await client.close();
      await server.stop();
    }
  });

  it('a connection that drops sends no batches until the ready check of the next one says so', async () => {
    const server = await startRedis();
    const client = createLockClient(server.url, { label: 'dropped', logger, writeFirstWhenIdle: true });
    try {
      await client.runScript(GET, ['warm-up'], []);
      expect(batchesOn(client)).toBe(true);
      await server.stop();
      // Calls made while it reconnects wait in ioredis' offline queue for whatever server answers next.
      await eventually(async () => !batchesOn(client), 5_000, 'batches off once the connection closed');
    } finally {
      await client.close();
    }
  });
});
