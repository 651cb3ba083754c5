import { setTimeout as sleep } from 'node:timers/promises';
import { LockNotAcquiredError, type LockModuleOptions, LockUnavailableError } from '../../lib';
import { commandTimeoutFor } from '../../lib/stores/shared/timing';
import { rejectionOf } from '../core/helpers/timing';
import {
  CLIENT_FAMILIES,
  CLIENT_FAMILY_NAMES,
  type ClientFamilyName,
  type LentClient,
} from '../support/client-families';
import { trackLockApps, uniqueKey } from '../support/lock-app';
import { type RedisProcess, startRedisServers } from '../support/redis-server';

const TTL_MS = 2_000;
/** The per-node command timeout the store derives from this ttl. */
const NODE_TIMEOUT_MS = commandTimeoutFor(TTL_MS);

/**
 * The families run by default. A lent ioredis client goes through the same adapter as a lent iovalkey one
 * (and test/redlock runs Redlock on ioredis connections): LOCK_TEST_CLIENTS=all adds it.
 */
const FAMILIES: readonly ClientFamilyName[] = process.env.LOCK_TEST_CLIENTS?.split(',').includes('all')
  ? CLIENT_FAMILY_NAMES
  : CLIENT_FAMILY_NAMES.filter((name) => name !== 'ioredis');

/**
 * The Redlock behaviours of test/redlock again, over nodes lent as clients of each family (3 real servers
 * per family): a paused minority is not waited for, a lost majority is "unavailable" (never "busy"), and
 * releases wake waiters through each family's pub/sub.
 */
describe.each(FAMILIES.map((name) => [name]))('Redlock over 3 nodes lent as %s clients', (name) => {
  let servers: RedisProcess[];
  let lent: LentClient[][];
  beforeAll(async () => {
    servers = await startRedisServers(3);
    // Two modules, each over clients of its own (as two processes would be).
    lent = await Promise.all(
      [0, 1].map(() => Promise.all(servers.map((server) => CLIENT_FAMILIES[name].client(server.url)))),
    );
  });
  afterAll(async () => {
    await Promise.all(lent.flat().map((client) => client.close()));
    await Promise.all(servers.map((server) => server.stop()));
  });
  const apps = trackLockApps();
  // Registered after trackLockApps, so it runs before it (hooks unwind): the apps close on live servers.
  afterEach(() => servers.forEach((server) => server.resume()));
  const nodes = (app: number): LockModuleOptions['nodes'] =>
    lent[app].map((client) => client.client) as LockModuleOptions['nodes'];

  it('1 of 3 paused: granted without waiting for it; busy for the other; a release wakes the waiter', async () => {
    const holder = await apps.start({ nodes: nodes(0), ttl: TTL_MS });
    const other = await apps.start({ nodes: nodes(1), ttl: TTL_MS });
    await (await holder.locks.acquire(uniqueKey('warm-up'))).release();
    await (await other.locks.acquire(uniqueKey('warm-up'))).release();
    servers[1].pause();

    const key = uniqueKey('paused');
    const startedAt = performance.now();
    // ttl 10 s: a per-node timeout of 1 s, and a lease the waiter below could only outwait by its 5 s wait.
    const lock = await holder.locks.acquire(key, { wait: 0, ttl: 10_000 });
    // Not a grant that waited for the paused node (one per-node timeout, 1 s), with room for a stall.
    expect(performance.now() - startedAt).toBeLessThan(commandTimeoutFor(10_000) - 200);
    expect(await rejectionOf(other.locks.acquire(key, { wait: 200 }))).toBeInstanceOf(LockNotAcquiredError);

    const waiting = other.locks.acquire(key, { wait: 5_000 });
    await sleep(100);
    const releasedAt = performance.now();
    expect(await lock.release()).toBe(true);
    const next = await waiting;
    // Not woken, the waiter would have slept through its whole 5 s wait (the holder's lease is 10 s).
    expect(performance.now() - releasedAt).toBeLessThan(3_000);
    expect(next.fence).toBeGreaterThan(lock.fence);
    await next.release();
  });

  it('2 of 3 paused: LockUnavailableError within about one node timeout, never "busy"', async () => {
    const { locks } = await apps.start({ nodes: nodes(0), ttl: TTL_MS });
    await (await locks.acquire(uniqueKey('warm-up'))).release();
    servers[0].pause();
    servers[2].pause();
    const startedAt = performance.now();
    expect(await rejectionOf(locks.tryAcquire(uniqueKey('no-quorum')))).toBeInstanceOf(LockUnavailableError);
    // About one node timeout (400 ms), with room for a stall of the loaded machine.
    expect(performance.now() - startedAt).toBeLessThan(NODE_TIMEOUT_MS + 1_500);
  });

  it('a held lock is renewed on every node past its ttl, and the lent clients stay open after app.close()', async () => {
    // ttl 900: each renewal has 600 ms to reach all three nodes (a node stalled past two renewals at ttl 400
    // would lose its copy for good); 1 s is still past the ttl.
    const app = await apps.start({ nodes: nodes(0), ttl: 900 });
    const key = uniqueKey('renewed');
    const lock = await app.locks.acquire(key);
    await sleep(1_000);
    expect(lock.signal.aborted).toBe(false);
    for (const server of servers) expect(await server.command('GET', `lock:{${key}}`)).toMatch(`${lock.token}|`);
    await app.close();
    for (const server of servers) expect(await server.command('EXISTS', `lock:{${key}}`)).toBe(0);
    for (const client of lent[0]) {
      expect(client.isOpen()).toBe(true);
      expect(await client.ping()).toBe('PONG');
    }
  });
});
