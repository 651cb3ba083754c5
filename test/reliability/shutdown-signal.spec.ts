import { uniqueKey } from '../support/lock-app';
import { startRedis, type RedisProcess } from '../support/redis-server';
import type { HoldingMessage, ShutdownHolderConfig } from './children/shutdown-holder';
import { trackChildren } from './support/child-process';

const STEP_TIMEOUT_MS = 20_000;
/** The process must be gone within this after SIGTERM (the library gives releases up to 2 s). */
const EXIT_BOUND_MS = 5_000;

/**
 * SIGTERM to a process with `app.enableShutdownHooks()` holding locks: every lock is released before the
 * process exits. The leases are 30 s long, so a key gone right after the exit was released, not expired.
 */
describe('shutdown on SIGTERM (enableShutdownHooks)', () => {
  const children = trackChildren();
  let server: RedisProcess;

  beforeAll(async () => {
    server = await startRedis();
  });
  afterAll(() => server?.stop());

  it('releases every held lock (acquire, multi-key, withLock with a reentrant inner lock, @Locked in progress) before exiting', async () => {
    const keys = Array.from({ length: 6 }, () => uniqueKey('shutdown'));
    const holder = children.start('shutdown-holder', {
      config: { lockOptions: { redis: server.url, ttl: 30_000 }, keys } satisfies ShutdownHolderConfig,
    });
    const { keys: held } = await holder.next<HoldingMessage>('holding', STEP_TIMEOUT_MS);
    expect(held).toHaveLength(6);
    for (const key of held) {
      expect([key, await server.command('EXISTS', `lock:{${key}}`)]).toEqual([key, 1]);
      expect(Number(await server.command('PTTL', `lock:{${key}}`))).toBeGreaterThan(20_000);
    }

    const signalledAt = performance.now();
    holder.signal('SIGTERM');
    const exit = await holder.exitWithin(EXIT_BOUND_MS);
    const exitMs = performance.now() - signalledAt;

    // Nest closes the application, then re-raises the signal to end the process.
    expect(exit).toEqual({ code: null, signal: 'SIGTERM' });
    const left = [];
    for (const key of held) if ((await server.command('EXISTS', `lock:{${key}}`)) === 1) left.push(key);
    console.log(`shutdown: ${held.length} locks held, process exited ${exitMs.toFixed(0)} ms after SIGTERM, ${left.length} lock keys left`);
    expect(left).toEqual([]);
    // The fence counters stay: a fence must keep growing over restarts of the library.
    for (const key of held) expect(await server.command('EXISTS', `lock:{${key}}:fence`)).toBe(1);
    expect(holder.reportedFaults).toEqual([]);
  });
});
