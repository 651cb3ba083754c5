import Redis, { Command } from 'ioredis';
import type { MockInstance } from 'vitest';
import type { LockModuleOptions } from '../../lib';
import { IoredisInternals } from '../../lib/stores/clients/ioredis/ioredis-internals';
import { ScriptCommand } from '../../lib/stores/clients/ioredis/script-command';
import { secondIoredisCopy } from '../support/ioredis-copy';
import { trackLockApps, uniqueKey } from '../support/lock-app';
import { commandStats, statsDelta } from '../support/redis-stats';
import { type RedisProcess, startRedisServers } from '../support/redis-server';
import { waiterAsleep } from '../support/waiters';

/** How many EVAL and EVALSHA commands a server ran. */
function scriptCommands(stats: Record<string, number>): number {
  return (stats.evalsha ?? 0) + (stats.eval ?? 0);
}

/**
 * An application's own ioredis is as a rule another copy than the library's (another version, or the same one
 * installed twice): a client of it, lent to the module, is duplicated by that copy, and the duplicate must take
 * the same path as the library's own connections (script commands built on that copy's Command class, a tick's
 * calls batched, one encoding per Redlock round), not ioredis' public API.
 */
describe('a lent client of another copy of ioredis', () => {
  const CopyRedis = secondIoredisCopy();
  let servers: RedisProcess[];
  const lent: InstanceType<typeof CopyRedis>[] = [];
  let ownCommandWritten: MockInstance;
  let copyDefineCommand: MockInstance;
  beforeAll(async () => {
    servers = await startRedisServers(3);
    for (const server of servers) lent.push(new CopyRedis(server.url));
  });
  afterAll(async () => {
    for (const client of lent) client.disconnect();
    await Promise.all((servers ?? []).map((server) => server.stop()));
  });
  beforeEach(() => {
    ownCommandWritten = vi.spyOn(ScriptCommand.prototype, 'toWritable');
    copyDefineCommand = vi.spyOn(CopyRedis.prototype, 'defineCommand');
  });
  afterEach(() => {
    ownCommandWritten.mockRestore();
    copyDefineCommand.mockRestore();
  });
  const apps = trackLockApps();

  /** A holder, a waiter of another module that sleeps until the release wakes it, and the next holder's release. */
  async function lockWaitRelease(options: LockModuleOptions, label: string): Promise<void> {
    const holder = await apps.start(options);
    const waiter = await apps.start(options);
    const key = uniqueKey(label);
    const held = await holder.locks.acquire(key, { ttl: 30_000 });
    expect(await waiter.locks.tryAcquire(key)).toBeNull();
    const waiting = waiter.locks.acquire(key, { wait: 10_000, ttl: 30_000 });
    await waiterAsleep(waiter.locks, key);
    await held.release();
    const next = await waiting;
    expect(next.fence).toBeGreaterThan(held.fence);
    await next.release();
    expect(await holder.locks.isLocked(key)).toBe(false);
  }

  it('is a copy: its Redis and Command are not the library’s, and every internal the adapter reads is found on it', () => {
    const connection = new CopyRedis({ lazyConnect: true });
    try {
      expect(CopyRedis).not.toBe(Redis);
      expect(CopyRedis.Command).not.toBe(Command);
      const internals = new IoredisInternals(connection);
      expect(internals.found).toEqual({ ownCommands: true, readyCheck: true, commandQueue: true, stream: true });
      expect(internals.commandClass).toBe(CopyRedis.Command);
    } finally {
      connection.disconnect();
    }
  });

  it("one Redis: the scripts go as this library's own commands, none registered on the copy with defineCommand", async () => {
    await lockWaitRelease({ redis: lent[0] as LockModuleOptions['redis'] }, 'copy-redis');
    expect(ownCommandWritten).toHaveBeenCalled();
    expect(copyDefineCommand).not.toHaveBeenCalled();
    expect(lent[0].status).toBe('ready');
  });

  it('one Redis: 100 attempts made in one tick reach Redis in a few batched script commands', async () => {
    const app = await apps.start({ redis: lent[1] as LockModuleOptions['redis'] });
    await app.locks.isLocked(uniqueKey('copy-warm'));
    const keys = Array.from({ length: 100 }, (_, i) => uniqueKey(`copy-batch-${i}`));
    const before = await commandStats(servers[1].url);
    const locks = await Promise.all(keys.map((key) => app.locks.tryAcquire(key)));
    const ran = statsDelta(before, await commandStats(servers[1].url));
    expect(locks.every((lock) => lock !== null)).toBe(true);
    // The first call alone, then batches of at most 32: one command per call would be 100.
    expect(scriptCommands(ran)).toBeLessThanOrEqual(6);
    await Promise.all(locks.map((lock) => lock?.release()));
  });

  it("Redlock over three nodes lent as the copy's clients: the scripts go as this library's own commands", async () => {
    await lockWaitRelease({ nodes: lent as unknown as LockModuleOptions['nodes'] }, 'copy-redlock');
    expect(ownCommandWritten).toHaveBeenCalled();
    expect(copyDefineCommand).not.toHaveBeenCalled();
  });
});
