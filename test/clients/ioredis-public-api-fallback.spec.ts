import Redis from 'ioredis';
import type { MockInstance } from 'vitest';
import type { LockModuleOptions } from '../../lib';
import { IoredisInternals, PUBLIC_API_ONLY } from '../../lib/stores/clients/ioredis/ioredis-internals';
import { ScriptCommand } from '../../lib/stores/clients/ioredis/script-command';
import { CLIENT_FAMILIES, type LentClient } from '../support/client-families';
import { trackLockApps, uniqueKey } from '../support/lock-app';
import { type RedisProcess, startRedisServers } from '../support/redis-server';
import { startMasterWithReplica } from '../support/redis-sentinel';
import { waiterAsleep } from '../support/waiters';

/**
 * The ioredis adapter reads a few ioredis internals (IoredisInternals: the Command protocol, the ready check,
 * the queue of sent commands, the socket). A future ioredis that changes them must find the adapter on
 * ioredis' public API instead, slower and never broken: here the check reports every internal absent, and
 * locks are taken, waited for and released, on one Redis and on Redlock, against real servers.
 */
describe('ioredis adapter without the internals it reads: the public-API path', () => {
  let servers: RedisProcess[];
  let detect: MockInstance;
  let defineCommand: MockInstance;
  let ownCommandWritten: MockInstance;
  beforeAll(async () => {
    servers = await startRedisServers(3);
  });
  afterAll(async () => {
    await Promise.all((servers ?? []).map((server) => server.stop()));
  });
  beforeEach(() => {
    detect = vi.spyOn(IoredisInternals, 'detect').mockReturnValue(PUBLIC_API_ONLY);
    defineCommand = vi.spyOn(Redis.prototype, 'defineCommand');
    ownCommandWritten = vi.spyOn(ScriptCommand.prototype, 'toWritable');
  });
  afterEach(() => {
    detect.mockRestore();
    defineCommand.mockRestore();
    ownCommandWritten.mockRestore();
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
    const releasedAt = performance.now();
    await held.release();
    const next = await waiting;
    // Woken by the release's announcement, not by the holder's lease running out.
    expect(performance.now() - releasedAt).toBeLessThan(5_000);
    expect(next.fence).toBeGreaterThan(held.fence);
    await next.release();
    expect(await holder.locks.isLocked(key)).toBe(false);
  }

  it('one Redis: acquire, a woken waiter, release; every script registered with defineCommand, none built by the adapter', async () => {
    await lockWaitRelease({ redis: servers[0].url }, 'fallback-redis');
    expect(detect).toHaveBeenCalled();
    expect(defineCommand.mock.calls.map(([name]) => name)).toContain('nestLockAcquire');
    expect(ownCommandWritten).not.toHaveBeenCalled();
  });

  it('a master with a replica and minReplicas: the script + WAIT pipeline by EVALSHA (EVAL after NOSCRIPT), acknowledged', async () => {
    const replicated = await startMasterWithReplica();
    try {
      await lockWaitRelease(
        { redis: replicated.master.url, minReplicas: { replicas: 1, timeout: 2_000 } },
        'fallback-wait',
      );
      expect(ownCommandWritten).not.toHaveBeenCalled();
    } finally {
      await replicated.stop();
    }
  });

  it('Redlock over three nodes: acquire, a woken waiter, release', async () => {
    await lockWaitRelease({ nodes: servers.map((server) => server.url) }, 'fallback-redlock');
    expect(defineCommand.mock.calls.map(([name]) => name)).toContain('nestLockAcquire');
    expect(ownCommandWritten).not.toHaveBeenCalled();
  });

  describe('a lent ioredis client', () => {
    let lent: LentClient;
    beforeAll(async () => {
      lent = await CLIENT_FAMILIES.ioredis.client(servers[1].url);
    });
    afterAll(() => lent?.close());

    it('its duplicate takes the public-API path too, and the lent client stays open', async () => {
      await lockWaitRelease({ redis: lent.client as LockModuleOptions['redis'] }, 'fallback-lent');
      expect(ownCommandWritten).not.toHaveBeenCalled();
      expect(lent.isOpen()).toBe(true);
    });
  });
});

describe('ioredis internals of the ioredis installed', () => {
  it('are all found on a standalone connection, so the fast path is the one the other suites run', () => {
    const connection = new Redis({ lazyConnect: true });
    try {
      expect(new IoredisInternals(connection).found).toEqual({
        ownCommands: true,
        readyCheck: true,
        commandQueue: true,
        stream: true,
      });
    } finally {
      connection.disconnect();
    }
  });
});
