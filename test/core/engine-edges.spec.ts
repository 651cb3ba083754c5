import Redis from 'ioredis';
import { execFileSync } from 'node:child_process';
import { setTimeout as sleep } from 'node:timers/promises';
import v8 from 'node:v8';
import { runInNewContext } from 'node:vm';
import { LockNotAcquiredError, LockOptionsError, type LockService, LockUnavailableError } from '../../lib';
import { trackLockApps, uniqueKey } from '../support/lock-app';
import { startRedis, type RedisProcess } from '../support/redis-server';
import { countScriptCalls } from '../support/script-calls';
import { eventually } from '../support/eventually';
import { rejectionOf } from './helpers/timing';

/**
 * The engine at its edges on one Redis: a reentrant acquire past its lease's validity, shutdown during a first
 * attempt, the script budget of a hot key, a newcomer queued behind a waiter that leaves, borrowed-client
 * waiters at shutdown, timers beyond Node's cap, handles held by long locks, a ttl too short to grant. The
 * Redlock counterparts are in test/redlock/redlock-contention.spec.ts.
 */

/** Blocks the event loop, like a long GC pause or CPU-bound work: no timer or I/O callback runs. */
function blockEventLoop(ms: number): void {
  const until = performance.now() + ms;
  while (performance.now() < until) {
    // Spinning on purpose.
  }
}

/** Our connections on the server (CLIENT LIST), not counting the one asking. */
async function connectionsOn(server: RedisProcess): Promise<number> {
  const list = String(await server.command('CLIENT', 'LIST'));
  return list.split('\n').filter((line) => line.includes('cmd=') && !line.includes('cmd=client')).length;
}

/**
 * setTimeout calls and process warnings during `ms` of idling, and the CPU time spent meanwhile: a timer
 * armed for a delay Node cannot honour fires after 1 ms, and a scheduler that re-arms it then spins.
 */
async function timersArmedDuring(ms: number): Promise<{ timers: number; warnings: string[]; cpuMs: number }> {
  const realSetTimeout = globalThis.setTimeout;
  const warnings: string[] = [];
  const onWarning = (warning: Error): void => void warnings.push(warning.name);
  let timers = 0;
  globalThis.setTimeout = ((...args: Parameters<typeof setTimeout>) => {
    timers++;
    return realSetTimeout(...args);
  }) as typeof setTimeout;
  process.on('warning', onWarning);
  const cpuBefore = process.cpuUsage();
  try {
    await new Promise((resolve) => realSetTimeout(resolve, ms));
  } finally {
    globalThis.setTimeout = realSetTimeout;
    process.off('warning', onWarning);
  }
  const cpu = process.cpuUsage(cpuBefore);
  return { timers, warnings, cpuMs: (cpu.user + cpu.system) / 1000 };
}

/**
 * Script calls (acquire and release) per acquisition on a hot key: `callers` callers of one service loop
 * acquire + release with nothing in between. Counted in the steady state, as this process writes them: the
 * first rounds (every caller attempting at once, then once more after subscribing) are left out, as in a
 * long-running service; what remains is the cost of each hand-over.
 */
async function hotKeyScriptsPerAcquisition(
  server: RedisProcess,
  locks: LockService,
  key: string,
  callers: number,
): Promise<number> {
  const warmUp = callers * 4;
  const measured = 2_000;
  let done = 0;
  let start: { calls: number; done: number } | undefined;
  // Counted as written, not with INFO commandstats: a batch of script calls is one EVALSHA there.
  const count = countScriptCalls([server.port]);
  try {
    await Promise.all(
      Array.from({ length: callers }, async () => {
        while (done < warmUp + measured) {
          await (await locks.acquire(key, { wait: 60_000 })).release();
          if (++done === warmUp) start = { calls: count.calls, done };
        }
      }),
    );
    const from = start as NonNullable<typeof start>;
    return (count.calls - from.calls) / (done - from.done);
  } finally {
    count.stop();
  }
}

describe('the engine at its edges, one Redis', () => {
  let server: RedisProcess;
  beforeAll(async () => {
    server = await startRedis();
  });
  afterAll(() => server?.stop());
  const apps = trackLockApps();

  it('a reentrant acquire never borrows a lease past its validity: it is lost, and the key is asked for again', async () => {
    const { locks } = await apps.start({ redis: server.url });
    const key = uniqueKey('expired-borrow');
    let outcome: unknown;
    let outerAborted = false;
    await locks.withLock(
      key,
      async (outer) => {
        blockEventLoop(1_000);
        // Meanwhile the 300 ms lease expired in Redis and another owner took the key (set while the loop is
        // still blocked, so no timer of ours could notice first).
        execFileSync('redis-cli', ['-p', String(server.port), 'SET', `lock:{${key}}`, 'another-owner', 'PX', '10000']);
        outcome = await rejectionOf(locks.acquire(key, { wait: 0 }));
        outerAborted = outer.signal.aborted;
      },
      { ttl: 300 },
    );
    expect(outerAborted).toBe(true);
    expect(outcome).toBeInstanceOf(LockNotAcquiredError);
  });

  it('shutdown while a first attempt on a busy key is in flight opens no connection afterwards', async () => {
    const holder = await apps.start({ redis: server.url });
    const key = uniqueKey('shutdown-subscribe');
    await holder.locks.acquire(key);
    const baseline = await connectionsOn(server);

    const waiter = await apps.start({ redis: server.url });
    const waiting = rejectionOf(waiter.locks.acquire(key, { wait: 5_000 }));
    const closing = waiter.close();
    expect(await waiting).toBeInstanceOf(LockUnavailableError);
    await closing;
    await sleep(300);
    expect(await connectionsOn(server)).toBe(baseline);
  });

  it('hot key: at most 2.2 script calls (acquire + release) per acquisition with zero-length critical sections (8, 32, 64 callers)', async () => {
    const { locks } = await apps.start({ redis: server.url });
    const figures: Record<number, number> = {};
    for (const callers of [8, 32, 64]) {
      figures[callers] = await hotKeyScriptsPerAcquisition(server, locks, uniqueKey(`hot-${callers}`), callers);
    }
    // Before the fix: 3.3 / 2.8 / 2.8 (a release counted twice sent every waiter with an attempt in flight
    // to retry at once); after: 2.00 at each count (one acquire script and one release per acquisition), and
    // 1.00 since a release hands the key to a waiter of its own process in the same script.
    console.log(
      `hot key, script calls per acquisition at 8/32/64 callers: ${[8, 32, 64].map((n) => figures[n].toFixed(3)).join(' / ')}`,
    );
    for (const callers of [8, 32, 64]) {
      expect(figures[callers], `${callers} callers: ${figures[callers]}`).toBeLessThanOrEqual(2.2);
      // Every acquisition runs a script at least (a hand-over grants in the release's): fewer is a count that missed calls.
      expect(figures[callers], `${callers} callers: ${figures[callers]}`).toBeGreaterThanOrEqual(0.95);
    }
  });

  it('a newcomer queued behind a waiter that gives up gets the key when the holder lease ends, not a ttl later', async () => {
    const holderSide = await apps.start({ redis: server.url });
    const waiterSide = await apps.start({ redis: server.url });
    const key = uniqueKey('departed-sleeper');
    const startedAt = performance.now();
    await holderSide.locks.acquire(key, { ttl: 1_000, autoExtend: false });
    const sleeper = rejectionOf(waiterSide.locks.acquire(key, { wait: 300 }));
    await sleep(100);
    const newcomer = waiterSide.locks.acquire(key, { wait: 20_000, ttl: 8_000 });
    expect(await sleeper).toBeInstanceOf(LockNotAcquiredError);
    const lock = await newcomer;
    const gotItAt = performance.now() - startedAt;
    // Free from ~1000 ms (the holder's lease ends); before the fix the newcomer slept its 8 s ttl. The bound
    // leaves 4 s for a stall of the loaded machine.
    expect(gotItAt).toBeLessThan(5_000);
    await lock.release();
  });

  it('with a borrowed client, a waiter is refused at shutdown (LockUnavailableError), not left attempting', async () => {
    const holder = await apps.start({ redis: server.url });
    const key = uniqueKey('borrowed-shutdown');
    await holder.locks.acquire(key);
    const client = new Redis(server.url);
    try {
      const waiterSide = await apps.start({ redis: client });
      const waiting = rejectionOf(waiterSide.locks.acquire(key, { wait: Infinity }));
      await sleep(200);
      const closedAt = performance.now();
      await waiterSide.close();
      const error = await Promise.race([waiting, sleep(3_000, 'still waiting 3 s after shutdown')]);
      expect(error).toBeInstanceOf(LockUnavailableError);
      expect(performance.now() - closedAt).toBeLessThan(3_000);
      expect(client.status).toBe('ready');
    } finally {
      client.disconnect();
    }
  });

  it('a lock held with a ttl beyond 24.8 days (Node caps timer delays at 2^31 - 1 ms) arms no timer every millisecond', async () => {
    const day = 24 * 60 * 60 * 1000;
    for (const options of [{}, { redis: server.url }]) {
      const { locks } = await apps.start(options);
      for (const [ttl, autoExtend] of [
        [30 * day, false],
        [100 * day, true],
      ] as const) {
        const lock = await locks.acquire(uniqueKey('long-ttl'), { ttl, autoExtend });
        const { timers, warnings, cpuMs } = await timersArmedDuring(300);
        // Before the fix: ~300 timers in 300 ms (and 40-70 ms of CPU), each with a TimeoutOverflowWarning.
        console.log(
          `ttl ${ttl / day} days, ${'redis' in options ? 'redis' : 'memory'}: ${timers} timers, ${cpuMs.toFixed(0)} ms CPU in 300 ms`,
        );
        expect(timers, `ttl ${ttl / day} days: ${timers} timers armed in 300 ms`).toBeLessThanOrEqual(3);
        expect(warnings).not.toContain('TimeoutOverflowWarning');
        expect(lock.signal.aborted).toBe(false);
        await lock.release();
      }
    }
  });

  it('handles read inside a long-held lock are not retained by it (combined signals)', async () => {
    const { locks } = await apps.start({});
    v8.setFlagsFromString('--expose-gc');
    const gc = runInNewContext('gc') as () => void;
    // The cycles below settle without a macrotask, so no renewal of the outer lease runs until they end: its ttl
    // outlasts them however slow the machine (on a loaded one they took longer than the default 10 s).
    await locks.withLock(
      'outer',
      async () => {
        const cycle = async (): Promise<void> => {
          const handle = await locks.acquire(['outer', 'inner']);
          void handle.signal;
          await handle.release();
        };
        for (let i = 0; i < 2_000; i++) await cycle();
        gc();
        const before = process.memoryUsage().heapUsed;
        for (let i = 0; i < 100_000; i++) await cycle();
        gc();
        const grown = process.memoryUsage().heapUsed - before;
        expect(grown, `heap grew ${(grown / 1024 / 1024).toFixed(1)} MB`).toBeLessThan(3 * 1024 * 1024);
      },
      { ttl: 600_000 },
    );
  });

  it('a ttl too short to ever be granted on Redis is a LockOptionsError that says why, on every store', async () => {
    const { locks } = await apps.start({ redis: server.url });
    for (const ttl of [1, 2, 3, 9]) {
      const error = await rejectionOf(locks.acquire(uniqueKey('tiny-ttl'), { ttl }));
      expect(error).toBeInstanceOf(LockOptionsError);
      expect((error as Error).message).toMatch(/from 10 to \d+: .*drift/);
    }
    await expect(apps.start({ ttl: 3 })).rejects.toThrow(LockOptionsError);
    // The in-process store, which could grant it, refuses it all the same: the stores agree.
    const memory = await apps.start({});
    expect(await rejectionOf(memory.locks.acquire(uniqueKey('tiny-ttl'), { ttl: 3 }))).toBeInstanceOf(LockOptionsError);
    const held = await memory.locks.acquire(uniqueKey('valid-ttl'), { ttl: 1_000 });
    expect(await rejectionOf(held.extend(3))).toBeInstanceOf(LockOptionsError);
    await held.release();
    const lock = await locks.acquire(uniqueKey('valid-ttl'), { ttl: 1_000 });
    await lock.release();
  });

  it('an acquire the driver gave up on, though Redis runs it later, is taken back: no key locked for nobody', async () => {
    // ioredis's own commandTimeout (50 ms) rejects before the store's (1 s at the default ttl): the error is
    // the driver's, not the store's timeout, as with MaxRetriesPerRequestError after a reset connection.
    const { locks } = await apps.start({ redis: { host: '127.0.0.1', port: server.port, commandTimeout: 50 } });
    await (await locks.acquire(uniqueKey('warm-up'))).release();
    const key = uniqueKey('driver-gave-up');
    server.pause();
    let error: unknown;
    try {
      error = await rejectionOf(locks.acquire(key, { wait: 0 }));
    } finally {
      server.resume();
    }
    expect(error).toBeInstanceOf(LockUnavailableError);
    expect(String((error as Error).message)).toContain('Command timed out');
    // The attempt ran once Redis resumed. Before the fix nothing took it back: the key stayed locked for
    // nobody for its whole ttl (10 s).
    await eventually(
      async () => (await server.command('EXISTS', `lock:{${key}}`)) === 0,
      1_000,
      'the late grant taken back',
    );
  });

  it('a commandTimeout beyond 24.8 days is not read by Node as 1 ms (every command would time out)', async () => {
    const { locks } = await apps.start({ redis: server.url, commandTimeout: 2 ** 31 });
    const lock = await locks.acquire(uniqueKey('long-command-timeout'), { wait: 0 });
    await lock.release();
  });
});
