import { setTimeout as sleep } from 'node:timers/promises';
import { LockLostError, LockUnavailableError, type Lock } from '../../lib';
import { eventually } from '../support/eventually';
import { connected, trackLockApps, uniqueKey } from '../support/lock-app';
import { recordUnhandledRejections } from '../support/real-process';
import { startRedis, type RedisProcess } from '../support/redis-server';
import { clientList, killClients } from './support/redis-clients';
import { TcpProxy } from './support/tcp-proxy';
import { abortedAt, rejectionOf, retryWhile, within } from './support/timing';

const TTL_MS = 600;
/** No operation may hang: each settles within this, Redis up, paused or dead. */
const BOUND_MS = 5_000;

/** The lease key of `key` under the default prefix (LockKeyNamer). */
const leaseKey = (key: string): string => `lock:{${key}}`;

/**
 * Faults of the connection between the library and one Redis, in this (real) process: connections killed
 * by the server, the server restarted empty, the server frozen or gone during acquire, renew and release.
 * Unhandled rejections are recorded on the real process object (Jest's sandboxed `process` never sees them).
 */
describe('connection faults (one Redis)', () => {
  const apps = trackLockApps();
  let server: RedisProcess;
  let unhandled: ReturnType<typeof recordUnhandledRejections>;

  beforeEach(async () => {
    unhandled = recordUnhandledRejections();
    server = await startRedis();
  });
  afterEach(async () => {
    unhandled.stop();
    await server.stop();
  });

  /** After each scenario: background work (renewals, reconnects, resubscription) rejected nothing unhandled. */
  async function expectNoUnhandledRejection(): Promise<void> {
    await sleep(200);
    expect(unhandled.reasons).toEqual([]);
  }

  it('CLIENT KILL of every library connection, three times, while locks are held: reconnect, renewals go on, the locks stay held', async () => {
    // Twice TTL_MS: a renewal has 800 ms to come back across a reconnect on a loaded machine. The kills stay
    // TTL_MS apart.
    const ttl = TTL_MS * 2;
    const { locks } = await apps.start({ redis: server.url, ttl });
    const [a, b, c, d] = ['a', 'b', 'c', 'd'].map(uniqueKey);
    const single = await locks.acquire(a, { ttl: 10_000 });
    const multi = await locks.acquire([b, c]);
    let insideRelease!: () => void;
    const running = locks.withLock(d, (lock) => new Promise<Lock>((resolve) => (insideRelease = () => resolve(lock))));
    // A waiter for `a`: it makes the library open its subscriber connection, which gets killed too.
    const waiter = locks.acquire(a, { wait: 10_000 });

    const killedIds = new Set<string>();
    for (let round = 0; round < 3; round++) {
      // Connected (again, after the previous round's kill) and subscribed: ioredis needs ~50 ms and a ready
      // check, a loaded machine longer.
      let connections: Awaited<ReturnType<typeof clientList>> = [];
      await eventually(
        async () => {
          connections = await clientList(server);
          const fresh = connections.every((connection) => !killedIds.has(connection.id));
          return fresh && connections.length >= 2 && connections.some((connection) => connection.sub > 0);
        },
        3_000,
        round === 0 ? 'the waiter subscribed' : 'reconnected and resubscribed after the kill',
      );
      expect(connections.length).toBeGreaterThanOrEqual(2);
      expect(connections.some((connection) => connection.sub > 0)).toBe(true);
      for (const connection of connections) expect(killedIds.has(connection.id)).toBe(false);
      expect(await killClients(server, connections)).toBe(connections.length);
      connections.forEach((connection) => killedIds.add(connection.id));
      await sleep(TTL_MS);
    }
    // At least 2.4 s after the first kill, twice the ttl: the keys of `multi` and `d` are only there if renewals
    // went on (`a`, with its 10 s lease, shows that nothing deleted it).
    await sleep(TTL_MS);
    for (const [key, lock] of [
      [a, single],
      [b, multi],
      [c, multi],
    ] as const) {
      expect([key, await server.command('GET', leaseKey(key))]).toEqual([
        key,
        expect.stringMatching(`^${lock.token}\\|`),
      ]);
      expect(Number(await server.command('PTTL', leaseKey(key)))).toBeGreaterThan(0);
      expect(lock.signal.aborted).toBe(false);
    }
    expect(await server.command('EXISTS', leaseKey(d))).toBe(1);
    await single.extend();

    // The waiter was resubscribed: the release of `a` (held for 10 s) reaches it at once, not at expiry.
    const releasedAt = performance.now();
    expect(await single.release()).toBe(true);
    const next = await within(waiter, 2_000, 'the waiter after the release');
    const handoffMs = performance.now() - releasedAt;
    console.log(
      `CLIENT KILL ×3 (${killedIds.size} connections): locks held throughout; waiter got the released key ${handoffMs.toFixed(1)} ms after release`,
    );
    expect(await next.release()).toBe(true);
    expect(await multi.release()).toBe(true);
    insideRelease();
    const inner = await running;
    expect(inner.signal.aborted).toBe(false);
    expect(await server.command('EXISTS', leaseKey(d))).toBe(0);
    await expectNoUnhandledRejection();
  });

  it('Redis restarted empty while a lock is held: its signal aborts within one lease, and the service keeps serving', async () => {
    const { locks } = await apps.start({ redis: server.url, ttl: TTL_MS * 2 });
    await connected(locks);
    const key = uniqueKey('restart');
    // A few grants first, so the fence counter has something to forget.
    for (let i = 0; i < 3; i++) await (await locks.acquire(key)).release();
    const held = await locks.acquire(key);
    const lost = abortedAt(held.signal);

    const restartedFrom = performance.now();
    await server.restart();
    const abortMs =
      (await within(lost, TTL_MS * 2 + BOUND_MS, 'the signal of the lock held across the restart')) - restartedFrom;
    expect(held.signal.reason).toBeInstanceOf(LockLostError);
    // Within about one lease of the restart; 1.5 s of slack for a stall of the loaded machine (the abort is a
    // timer), while an abort that never comes is caught by within() above.
    expect(abortMs).toBeLessThan(TTL_MS * 2 + 1_500);

    // Serving again: new acquisitions work once the client has reconnected (it retries by itself).
    const again = await retryWhile(LockUnavailableError, () => locks.acquire(key, { wait: 0 }), BOUND_MS);
    const other = await locks.acquire(uniqueKey('after-restart'), { wait: 0 });
    // Redis without persistence forgot the fence counter; the fence is still above the one before, since a
    // grant's fence is at least the server's clock in µs.
    console.log(
      `Redis restart: held lock's signal aborted ${abortMs.toFixed(0)} ms after the restart began (ttl ${TTL_MS * 2}); fence before ${held.fence}, after ${again.fence}`,
    );
    expect(again.fence).toBeGreaterThan(held.fence);
    expect(await held.release()).toBe(false);
    expect(await again.release()).toBe(true);
    expect(await other.release()).toBe(true);
    await expectNoUnhandledRejection();
  });

  it.each([
    ['one key', 1],
    ['three keys', 3],
  ])(
    'an acquire (%s) whose reply is lost to a connection reset is granted when the client resends it, not found busy against its own token',
    async (_label, keyCount) => {
      const proxy = await TcpProxy.start(server.port);
      const app = await apps.start({ redis: proxy.url, ttl: 10_000 });
      try {
        const { locks } = app;
        await (await locks.acquire(uniqueKey('warm-up'))).release();
        const keys = Array.from({ length: keyCount }, () => uniqueKey('lost-reply'));
        proxy.swallowReplies = true;
        const attempt = locks.acquire(keys, { wait: 0 });
        // The script ran in Redis (the keys are set) but its reply went nowhere; then the connection resets.
        await eventually(
          async () => (await server.command('EXISTS', leaseKey(keys[keyCount - 1]))) === 1,
          3_000,
          'the swallowed script run',
        );
        const firstRun = await server.command('GET', leaseKey(keys[0]));
        proxy.resetAll();
        proxy.swallowReplies = false;
        // ioredis resends unanswered commands after reconnecting: the second run finds the keys under its own token.
        const lock = await within(attempt, BOUND_MS, 'the acquire whose reply was lost');
        expect(firstRun).toMatch(`${lock.token}|`); // the stored value is `<token>|<instance>`
        expect(await lock.release()).toBe(true);
        for (const key of keys) expect(await server.command('EXISTS', leaseKey(key))).toBe(0);
      } finally {
        await app.close();
        await proxy.stop();
      }
      await expectNoUnhandledRejection();
    },
  );

  it.each(['paused (SIGSTOP: connected, never answers)', 'killed (connection refused)'])(
    'Redis %s during acquire, renew and release: typed errors in bounded time, no hang, no unhandled rejection',
    async (how) => {
      const paused = how.startsWith('paused');
      const app = await apps.start({ redis: server.url, ttl: TTL_MS });
      const { locks } = app;
      await connected(locks);
      const renewed = await locks.acquire(uniqueKey('renewed'));
      const extended = await locks.acquire(uniqueKey('extended'));
      const released = await locks.acquire(uniqueKey('released'));
      const lost = abortedAt(renewed.signal);
      const failedAcquireKey = uniqueKey('acquire');

      if (paused) server.pause();
      else await server.kill();
      const downAt = performance.now();
      const outcomes = await Promise.all([
        within(rejectionOf(locks.acquire(failedAcquireKey, { wait: 1_000 })), BOUND_MS, 'acquire'),
        within(rejectionOf(locks.tryAcquire(uniqueKey('try'))), BOUND_MS, 'tryAcquire'),
        within(rejectionOf(locks.withLock(uniqueKey('with'), () => 'ran')), BOUND_MS, 'withLock'),
        within(rejectionOf(extended.extend()), BOUND_MS, 'extend'),
        within(rejectionOf(released.release()), BOUND_MS, 'release'),
        within(rejectionOf(locks.isLocked(uniqueKey('probe'))), BOUND_MS, 'isLocked'),
      ]);
      const names = ['acquire', 'tryAcquire', 'withLock', 'extend', 'release', 'isLocked'];
      for (const [index, outcome] of outcomes.entries()) {
        expect([names[index], outcome.error]).toEqual([names[index], expect.any(LockUnavailableError)]);
      }
      // Renewal in the background: it cannot reach Redis, so the lease is given up once its validity ends.
      const lostMs = (await within(lost, TTL_MS + BOUND_MS, 'the renewed lock signal')) - downAt;
      expect(renewed.signal.reason).toBeInstanceOf(LockLostError);
      console.log(
        `Redis ${paused ? 'paused' : 'killed'}: ${names.map((name, i) => `${name} ${outcomes[i].ms.toFixed(0)} ms`).join(', ')}; ` +
          `held lock lost after ${lostMs.toFixed(0)} ms (ttl ${TTL_MS})`,
      );
      // Legitimately lost at most ~TTL_MS after downAt; 1.5 s of slack for a stall around the validity deadline
      // (the abort is a timer), while a renewal that hangs is caught by within() above.
      expect(lostMs).toBeLessThan(TTL_MS + 1_500);

      if (paused) server.resume();
      else await server.restart();
      // Back: the service serves again, and nothing the failed calls sent is left holding a key.
      const after = await retryWhile(
        LockUnavailableError,
        () => locks.acquire(uniqueKey('after'), { wait: 0 }),
        BOUND_MS,
      );
      expect(await after.release()).toBe(true);
      await sleep(TTL_MS + 100);
      for (const key of [failedAcquireKey, ...released.keys, ...renewed.keys]) {
        expect([key, await locks.isLocked(key)]).toEqual([key, false]);
      }
      await within(app.close(), BOUND_MS, 'app.close()');
      await expectNoUnhandledRejection();
    },
  );
});
