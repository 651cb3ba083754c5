import { setTimeout as sleep } from 'node:timers/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import Redis from 'ioredis';
import { Logger } from '@nestjs/common';
import { LockHealthIndicator, type LockModuleOptions, LockOptionsError, type LockService } from '../../lib';
import { abortedAt, within } from '../support/deadlines';
import { eventually } from '../support/eventually';
import { rejectionOf } from '../core/helpers/timing';
import { trackLockApps, uniqueKey } from '../support/lock-app';
import { startRedis, startRedisServers, type RedisProcess } from '../support/redis-server';

/**
 * One server listed twice under two names passes the options check at bootstrap (it compares what the
 * options say), and would count its grant as two votes: with 3 nodes, that server alone is a quorum. The
 * store asks each node which server it reaches (run_id) and from then on refuses every acquisition.
 */
describe('Redlock nodes that are one server under two names', () => {
  let shared: RedisProcess;
  let other: RedisProcess;
  let socket: string;
  const lent: Redis[] = [];
  const apps = trackLockApps();

  beforeAll(async () => {
    socket = path.join(tmpdir(), `lock-test-${randomBytes(4).toString('hex')}.sock`);
    shared = await startRedis({ args: ['--unixsocket', socket, '--unixsocketperm', '700'] });
    other = await startRedis();
  });
  afterAll(async () => {
    for (const client of lent) client.disconnect();
    await Promise.all([shared?.stop(), other?.stop()]);
  });

  /** Acquisitions until one is refused with a LockOptionsError (or `ms` pass): the check runs in the background. */
  async function refusal(locks: LockService, ms: number): Promise<LockOptionsError | undefined> {
    const deadline = performance.now() + ms;
    while (performance.now() < deadline) {
      const outcome = await locks.acquire(uniqueKey('same-server')).then(
        (lock) => lock.release(),
        (error: unknown) => error,
      );
      if (outcome instanceof LockOptionsError) return outcome;
      await sleep(20);
    }
    return undefined;
  }

  const twoNames: [string, () => LockModuleOptions['nodes']][] = [
    ['its TCP address and its unix socket', () => [shared.url, socket, other.url]],
    [
      'two clients of it, lent by the application',
      () => {
        const clients = [new Redis(shared.url), new Redis(shared.url), new Redis(other.url)];
        lent.push(...clients);
        return clients;
      },
    ],
  ];

  it.each(twoNames)(
    '%s: accepted at bootstrap, then every acquisition is a LockOptionsError naming both nodes, logged once; leases end, health is down',
    async (_label, nodes) => {
      const errors = vi.spyOn(Logger.prototype, 'error');
      try {
        const app = await apps.start({ nodes: nodes(), ttl: 1_500 });
        const { locks } = app;
        // Granted before the check could answer (the unprotected first round trip), or refused at once; one of
        // them renewed by auto-extension, one not (its holder extends it by hand).
        const [early, unrenewed] = await Promise.all([
          locks.acquire(uniqueKey('early')).catch(() => undefined),
          locks.acquire(uniqueKey('unrenewed'), { autoExtend: false }).catch(() => undefined),
        ]);
        const error = await refusal(locks, 3_000);
        expect(error).toBeInstanceOf(LockOptionsError);
        expect(error?.option).toBe('nodes[1]');
        expect(error?.message).toContain('nodes[0] reaches the same one');
        // From then on, at once: no grant counts that server twice again.
        expect(await rejectionOf(locks.tryAcquire(uniqueKey('after')))).toMatchObject({
          option: 'nodes[1]',
          message: error?.message,
        });
        expect(errors.mock.calls.filter(([message]) => String(message).includes('reaches the same one'))).toHaveLength(
          1,
        );
        // A lease that may stand on a vote counted twice is not renewed: its holder learns it lost the lock.
        // Told why, not "gone when renewing it"; an explicit extend says the same.
        if (early) {
          await within(abortedAt(early.signal), 3_000, 'the early lease lost');
          expect(String((early.signal.reason as Error).message)).toMatch(
            /its renewal was refused: .*nodes\[0\] reaches the same one.*count twice\. Stop work/,
          );
        }
        if (unrenewed) {
          const refused = await rejectionOf(unrenewed.extend());
          expect(refused).toMatchObject({
            name: 'LockLostError',
            message: expect.stringMatching(/its renewal was refused: .*reaches the same one/),
          });
          expect((refused as Error).cause).toBeInstanceOf(LockOptionsError);
          expect(unrenewed.signal.aborted).toBe(true);
        }
        expect(early ?? unrenewed).toBeDefined();
        const health = await app.module.get(LockHealthIndicator).isHealthy();
        expect(health.lock).toMatchObject({ status: 'down', message: expect.stringContaining('reaches the same one') });
      } finally {
        errors.mockRestore();
      }
    },
  );

  it('a node whose user may not run INFO is left out of the check, said once; its locks work', async () => {
    const third = await startRedisServers(1);
    await other.command('ACL', 'SETUSER', 'locker', 'on', '>locker-pw', '~*', '&*', '+@all', '-info');
    const warnings = vi.spyOn(Logger.prototype, 'warn');
    try {
      const restricted = other.url.replace('redis://', 'redis://locker:locker-pw@');
      const { locks } = await apps.start({ nodes: [shared.url, restricted, third[0].url], ttl: 2_000 });
      const leftOutWarnings = () =>
        warnings.mock.calls.filter(([message]) =>
          String(message).startsWith('Cannot tell which Redis server nodes[1] is'),
        );
      expect(await locks.tryAcquire(uniqueKey('acl'))).not.toBeNull();
      await eventually(async () => leftOutWarnings().length > 0, 5_000, 'the warning for the node that refused INFO');
      expect(await refusal(locks, 300)).toBeUndefined();
      const leftOut = leftOutWarnings();
      expect(leftOut).toHaveLength(1);
      expect(String(leftOut[0][0])).toContain("can't run this command");
    } finally {
      warnings.mockRestore();
      await other.command('ACL', 'DELUSER', 'locker');
      await Promise.all(third.map((server) => server.stop()));
    }
  });

  it('three servers of their own are never refused', async () => {
    const third = await startRedisServers(1);
    try {
      const servers = [shared, other, third[0]];
      const infoCalls = async (): Promise<number[]> =>
        Promise.all(
          servers.map(async (server) =>
            Number(/cmdstat_info:calls=(\d+)/.exec(String(await server.command('INFO', 'commandstats')))?.[1] ?? 0),
          ),
        );
      const before = await infoCalls();
      let reads = 0;
      const { locks } = await apps.start({ nodes: servers.map((server) => server.url), ttl: 2_000 });
      expect(await locks.tryAcquire(uniqueKey('distinct'))).not.toBeNull();
      // Every server has answered the check: its INFO, run from the script, counts under its own name. So does
      // each of these reads, once done: the k-th read after the first sees k of them, and the check's on top.
      await eventually(
        async () => {
          const calls = await infoCalls();
          reads++;
          return calls.every((count, i) => count - before[i] - reads >= 1);
        },
        5_000,
        'every node asked which server it is',
      );
      expect(await refusal(locks, 300)).toBeUndefined();
    } finally {
      await Promise.all(third.map((server) => server.stop()));
    }
  });
});
