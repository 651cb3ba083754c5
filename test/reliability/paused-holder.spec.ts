import Redis from 'ioredis';
import { setTimeout as sleep } from 'node:timers/promises';
import { FencedWriter } from '../../lib';
import { trackLockApps, uniqueKey } from '../support/lock-app';
import { startRedis, type RedisProcess } from '../support/redis-server';
import type { HoldingMessage, PausedHolderConfig, PausedHolderReport } from './children/paused-holder';
import type { ThawedWriterConfig, ThawedWriterReport } from './children/thawed-writer';
import { trackChildren } from './support/child-process';

const TTL_MS = 1_000;
const STEP_TIMEOUT_MS = 20_000;
/**
 * "Promptly": the bound the lost lock must be noticed within once the holder runs again (measured: a few ms).
 * Generous, as the thawed child may not be scheduled at once on a busy machine; a signal that never aborts,
 * or a late write accepted, is caught by the checks on abortReason, abortedAt and write.
 */
const DETECT_BOUND_MS = 3_000;

/**
 * The GC-pause scenario (Kleppmann, "How to do distributed locking"): the holder process is frozen with
 * SIGSTOP past its lease, another process takes the lock with a greater fence and writes, the holder is
 * thawed and tries its own write. Its signal must abort at once, and its write must be refused by the
 * fenced writer: the lease alone cannot stop a write that was already on its way.
 */
describe('paused holder (SIGSTOP past the lease)', () => {
  const children = trackChildren();
  const apps = trackLockApps();
  let server: RedisProcess;
  let data: Redis;

  beforeAll(async () => {
    server = await startRedis();
    data = new Redis(server.url);
  });
  afterAll(async () => {
    data?.disconnect();
    await server?.stop();
  });

  it('the thawed holder learns at once that its lock is lost, and its late write is refused', async () => {
    const lockKey = uniqueKey('paused');
    const resourceKey = uniqueKey('resource');
    const holder = children.start('paused-holder', {
      config: {
        lockOptions: { redis: server.url, ttl: TTL_MS },
        dataUrl: server.url,
        lockKey,
        resourceKey,
      } satisfies PausedHolderConfig,
    });
    const held = await holder.next<HoldingMessage>('holding', STEP_TIMEOUT_MS);

    holder.signal('SIGSTOP');
    const pausedAt = performance.now();
    // The other process (this one): waits for the frozen holder's lease to run out, then takes the lock.
    const { locks } = await apps.start({ redis: server.url, ttl: 10_000 });
    const successor = await locks.acquire(lockKey, { wait: 2 * TTL_MS + 2_000 });
    const waited = performance.now() - pausedAt;
    expect(successor.fence).toBeGreaterThan(held.fence);
    await new FencedWriter(data).set(resourceKey, 'written by the successor', successor);
    // Let the holder stay frozen a little longer, as a long pause would.
    await sleep(200);

    const resumedAt = performance.timeOrigin + performance.now();
    holder.signal('SIGCONT');
    holder.send({ type: 'write' });
    const report = await holder.next<PausedHolderReport>('result', STEP_TIMEOUT_MS);
    await holder.exitWithin(STEP_TIMEOUT_MS);

    expect(report.abortReason).toBe('LockLostError');
    expect(report.abortedAt).not.toBeNull();
    const detectMs = (report.abortedAt as number) - resumedAt;
    console.log(
      `paused holder: fence ${held.fence} frozen; successor acquired fence ${successor.fence} after ${Math.round(waited)} ms; ` +
        `lost lock detected ${detectMs.toFixed(1)} ms after SIGCONT (signal aborted before the write: ${report.abortedBeforeWrite}); ` +
        `late write: ${report.write} (last fence ${report.lastFence}); release() answered ${report.released}`,
    );
    expect(detectMs).toBeLessThan(DETECT_BOUND_MS);
    expect(report.write).toBe('FencedWriteRejectedError');
    expect(report.lastFence).toBe(successor.fence);
    expect(report.released).toBe(false);
    // The holder's release did not touch the successor's lease, nor its write.
    expect(await data.get(resourceKey)).toBe('written by the successor');
    expect(await data.get(`lock:{${lockKey}}`)).toMatch(`${successor.token}|`); // the lease's value is `<token>|<instance>`
    expect(await locks.isLocked(lockKey)).toBe(true);
    expect(await successor.release()).toBe(true);
    expect(holder.reportedFaults).toEqual([]);
  });

  it('a thawed holder that checks its signal before each write makes no write after the pause', async () => {
    const lockKey = uniqueKey('thawed-writer');
    const holder = children.start('thawed-writer', {
      config: { lockOptions: { redis: server.url, ttl: TTL_MS }, lockKey } satisfies ThawedWriterConfig,
    });
    await holder.next('holding', STEP_TIMEOUT_MS);
    await sleep(200);
    holder.signal('SIGSTOP');
    // Frozen well past its lease, as the holder of a long GC pause or a stopped VM is.
    await sleep(2.4 * TTL_MS);
    const resumedAt = performance.timeOrigin + performance.now();
    holder.signal('SIGCONT');
    const report = await holder.next<ThawedWriterReport>('result', STEP_TIMEOUT_MS);
    await holder.exitWithin(STEP_TIMEOUT_MS);
    const afterResume = report.writes.filter((at) => at >= resumedAt);
    console.log(
      `thawed writer: ${report.writes.length} writes before the pause, ${afterResume.length} after it; ` +
        `its first read after SIGCONT said aborted ${(report.abortedReadAt - resumedAt).toFixed(1)} ms in (${report.reason})`,
    );
    expect(report.writes.length).toBeGreaterThan(0);
    expect(afterResume).toEqual([]);
    expect(report.reason).toBe('LockLostError');
    expect(holder.reportedFaults).toEqual([]);
  });
});
