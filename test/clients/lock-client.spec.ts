import { Logger } from '@nestjs/common';
import { setTimeout as sleep } from 'node:timers/promises';
import { type LockClient, createLockClient, lockScript } from '../../lib/stores/clients';
import { CLIENT_FAMILIES, CLIENT_FAMILY_NAMES, type LentClient, legacyNodeRedis4 } from '../support/client-families';
import { eventually } from '../support/eventually';
import { type MasterWithReplica, startMasterWithReplica } from '../support/redis-sentinel';
import { type RedisProcess, startRedis } from '../support/redis-server';
import { commandStats, statsDelta } from '../support/redis-stats';

/** Adds ARGV[1] to KEYS[1] and returns the sum: a write (so WAIT has something to acknowledge) with a reply. */
const ADD = lockScript('nestLockTestAdd', "return redis.call('INCRBY', KEYS[1], ARGV[1])");
/** Another script, never run before in a file: its first run must load it. */
const ECHO = lockScript('nestLockTestEcho', 'return {KEYS[1], ARGV[1], ARGV[2]}');

const logger = new Logger('LockClientTest');

/** How many connections a server has now (this probe's own included). */
async function connections(server: RedisProcess): Promise<number> {
  return String(await server.command('CLIENT', 'LIST'))
    .trim()
    .split('\n').length;
}

let counter = 0;
const freshKey = (label: string): string => `${label}:${process.pid}:${++counter}`;

/**
 * The client seam against real redis-server processes, once per client family: each adapter runs scripts
 * by SHA (loading them on NOSCRIPT), WAITs for replicas in the same round trip, subscribes, and owns
 * exactly the connections it opens, leaving the lent client alone.
 */
describe.each(CLIENT_FAMILY_NAMES.map((name) => [name]))('LockClient over a lent %s client', (name) => {
  const family = CLIENT_FAMILIES[name];
  let replicated: MasterWithReplica;
  let server: RedisProcess;
  let lent: LentClient;
  const opened: LockClient[] = [];

  beforeAll(async () => {
    replicated = await startMasterWithReplica();
    server = replicated.master;
    lent = await family.client(server.url);
  });
  afterEach(async () => {
    replicated.replica.resume();
    await Promise.all(opened.splice(0).map((client) => client.close()));
  });
  afterAll(async () => {
    await lent?.close();
    await replicated?.stop();
  });

  function lockClient(from: object = lent.client): LockClient {
    const client = createLockClient(from, { label: `test ${name}`, logger, writeFirstWhenIdle: true });
    opened.push(client);
    return client;
  }

  it('runs a script by SHA: loaded once on NOSCRIPT, by SHA after that, and loaded again after SCRIPT FLUSH', async () => {
    const client = lockClient();
    const key = freshKey('echo');
    const before = await commandStats(server.url);
    expect(await client.runScript(ECHO, [key], ['a', 7])).toEqual([key, 'a', '7']);
    expect(await client.runScript(ECHO, [key], ['b', 8])).toEqual([key, 'b', '8']);
    expect(await client.runScript(ECHO, [key], ['c', 9])).toEqual([key, 'c', '9']);
    const ran = statsDelta(before, await commandStats(server.url));
    expect(ran.eval).toBe(1);
    expect(ran.evalsha).toBeGreaterThanOrEqual(2);

    await server.command('SCRIPT', 'FLUSH');
    expect(await client.runScript(ECHO, [key], ['d', 10])).toEqual([key, 'd', '10']);
  });

  it('a new connection is sent the script in full first: no NOSCRIPT after a reconnect (a resend would reorder commands)', async () => {
    const client = lockClient();
    const key = freshKey('reconnect');
    expect(await client.runScript(ECHO, [key], ['a', 1])).toEqual([key, 'a', '1']);
    // The server forgets its scripts and drops the lock connection: the client reconnects on its own.
    await server.command('SCRIPT', 'FLUSH');
    await server.command('CONFIG', 'RESETSTAT');
    await server.command('CLIENT', 'KILL', 'TYPE', 'normal', 'SKIPME', 'yes');
    // The first command may meet the dying socket (rejected, never run): it is tried again until one runs.
    await eventually(
      () =>
        client.runScript(ECHO, [key], ['b', 2]).then(
          () => true,
          () => false,
        ),
      5_000,
      'a script ran on the new connection',
    );
    expect(await client.runScript(ECHO, [key], ['c', 3])).toEqual([key, 'c', '3']);
    const errors = String(await server.command('INFO', 'errorstats'));
    expect(errors).not.toContain('NOSCRIPT');
  });

  it('EXISTS and PING', async () => {
    const client = lockClient();
    const key = freshKey('exists');
    expect(await client.exists(key)).toBe(0);
    expect(Number(await client.runScript(ADD, [key], [2]))).toBe(2);
    expect(await client.exists(key)).toBe(1);
    await expect(client.ping()).resolves.toBeUndefined();
  });

  it('script and WAIT in one round trip: 1 replica acknowledges; a stopped replica does not, within the timeout', async () => {
    const client = lockClient();
    const key = freshKey('replicated');
    const acked = await client.runScriptAndWait(ADD, [key], [5], 1, 1_000);
    expect(Number(acked.reply)).toBe(5);
    expect(acked.acks).toBe(1);
    expect(await replicated.replica.command('GET', key)).toBe('5');

    replicated.replica.pause();
    const startedAt = performance.now();
    const unacked = await client.runScriptAndWait(ADD, [key], [1], 1, 200);
    const waited = performance.now() - startedAt;
    replicated.replica.resume();
    // The script ran on the master all the same: WAIT reports, it does not undo.
    expect(Number(unacked.reply)).toBe(6);
    expect(unacked.acks).toBe(0);
    expect(waited).toBeGreaterThanOrEqual(190);
    expect(waited).toBeLessThan(2_000);
  });

  it('script and WAIT after SCRIPT FLUSH: the acks cover the script (both are sent again after NOSCRIPT)', async () => {
    const client = lockClient();
    const key = freshKey('flushed');
    await client.runScriptAndWait(ADD, [key], [1], 1, 5_000);
    // The server has the script now (a client that sends by SHA first was answered NOSCRIPT once): sent once.
    expect(await client.runScriptAndWait(ADD, [key], [1], 1, 5_000)).toMatchObject({ acks: 1, resent: false });
    await server.command('SCRIPT', 'FLUSH');
    const reply = await client.runScriptAndWait(ADD, [key], [1], 1, 5_000);
    expect(Number(reply.reply)).toBe(3);
    expect(reply.acks).toBe(1);
    // Sent again after NOSCRIPT, which the caller must know: commands made meanwhile ran before it.
    expect(reply.resent).toBe(true);
    expect(await replicated.replica.command('GET', key)).toBe('3');
  });

  it('a subscriber receives messages of subscribed channels only, until unsubscribed', async () => {
    const subscriber = lockClient().duplicate({ subscriber: true });
    opened.push(subscriber);
    const received: [string, string][] = [];
    subscriber.onMessage((channel, message) => received.push([channel, message]));
    const [a, b] = [freshKey('channel-a'), freshKey('channel-b')];
    await subscriber.subscribe(a);
    await subscriber.subscribe(b);
    await server.command('PUBLISH', a, 'one');
    await server.command('PUBLISH', b, 'two');
    await server.command('PUBLISH', freshKey('channel-other'), 'never');
    await eventually(async () => received.length >= 2, 2_000, 'both messages received');
    await subscriber.unsubscribe(a);
    await server.command('PUBLISH', a, 'after');
    await server.command('PUBLISH', b, 'three');
    await eventually(async () => received.length >= 3, 2_000, 'third message received');
    await sleep(50);
    expect(received).toEqual([
      [a, 'one'],
      [b, 'two'],
      [b, 'three'],
    ]);
  });

  it('opens its own connections only when used, closes exactly those, and never closes the lent client', async () => {
    const baseline = await connections(server);
    const client = lockClient();
    const subscriber = client.duplicate({ subscriber: true });
    opened.push(subscriber);
    // Connected on first use: a module whose bootstrap fails never opened anything.
    expect(await connections(server)).toBe(baseline);
    await client.ping();
    await subscriber.subscribe(freshKey('channel'));
    expect(await connections(server)).toBe(baseline + 2);

    await client.close();
    await subscriber.close();
    await eventually(async () => (await connections(server)) === baseline, 2_000, 'back to the baseline');
    expect(lent.isOpen()).toBe(true);
    expect(await lent.ping()).toBe('PONG');
  });

  it("duplicates the lent client's options: its database", async () => {
    const inDatabase5 = await family.client(server.url, { database: 5 });
    try {
      const client = lockClient(inDatabase5.client);
      await client.runScript(ADD, [freshKey('db5')], [1]);
      expect(String(await server.command('INFO', 'keyspace'))).toMatch(/db5:keys=1,/);
    } finally {
      await inDatabase5.close();
    }
  });

  it('rejects with the server error, its code kept in the message', async () => {
    const client = lockClient();
    const key = freshKey('not-a-number');
    await server.command('SET', key, 'text');
    await expect(client.runScript(ADD, [key], [1])).rejects.toThrow(/ERR|not an integer/);
  });
});

describe('LockClient over a lent node-redis 4 client in legacy mode', () => {
  let server: RedisProcess;
  beforeAll(async () => {
    server = await startRedis();
  });
  afterAll(() => server?.stop());

  it('works through a promise-mode duplicate, and leaves the lent client in legacy mode, open', async () => {
    const lent = await legacyNodeRedis4(server.url);
    const client = createLockClient(lent.client, { label: 'legacy', logger, writeFirstWhenIdle: true });
    try {
      expect(Number(await client.runScript(ADD, ['legacy'], [3]))).toBe(3);
      expect(await client.exists('legacy')).toBe(1);
    } finally {
      await client.close();
    }
    expect(await lent.ping()).toBe('PONG');
    await lent.close();
  });
});

describe('LockClient from a URL (ioredis, made and owned by the module)', () => {
  let server: RedisProcess;
  beforeAll(async () => {
    server = await startRedis();
  });
  afterAll(() => server?.stop());

  it('connects on first use and closes on close()', async () => {
    const baseline = await connections(server);
    const client = createLockClient(server.url, { label: 'owned', logger, writeFirstWhenIdle: true });
    expect(client.family).toBe('ioredis');
    expect(await connections(server)).toBe(baseline);
    expect(Number(await client.runScript(ADD, ['owned'], [4]))).toBe(4);
    expect(await connections(server)).toBe(baseline + 1);
    await client.close();
    await eventually(async () => (await connections(server)) === baseline, 2_000, 'closed');
  });
});
