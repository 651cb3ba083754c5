import { setTimeout as sleep } from 'node:timers/promises';
import {
  type AcquireOptions,
  type Lock,
  LockError,
  type LockModuleOptions,
  type LockService,
  LockUnavailableError,
} from '../../lib';
import { connected, trackLockApps, uniqueKey } from '../support/lock-app';
import { type MasterWithReplica, startMasterWithReplica } from '../support/redis-sentinel';
import { waiterAsleep } from '../support/waiters';

/**
 * WAIT's timeout: a grant the stalled replica has not acknowledged by then is taken back. Ample for a live
 * replica on a loaded machine (the waiter's own grant, once the replica resumes, must be acknowledged in time).
 */
const ACK_TIMEOUT_MS = 500;
/** How long the replica stays stalled: past ACK_TIMEOUT_MS, so the grant below is taken back. */
const STALL_MS = 750;
/** The taken-back grant's lease: a waiter it refused, and that nothing wakes, sleeps until its end. */
const GRANT_TTL_MS = 6_000;
/** Well below GRANT_TTL_MS: woken by the take-back's announcement. Generous for a loaded machine. */
const GRANTED_WITHIN_MS = 3_000;

/**
 * With minReplicas, a grant too few replicas acknowledged in time is taken back, and its caller gets an error
 * rather than the lock. Another instance's attempt that grant refused meanwhile marked the key awaited and
 * sleeps until a release of it: the take-back is that release, announced like any other.
 */
describe('minReplicas: a grant taken back for want of acknowledgement is announced', () => {
  let servers: MasterWithReplica;
  beforeAll(async () => {
    servers = await startMasterWithReplica();
  });
  afterAll(async () => {
    servers?.replica.resume();
    await servers?.stop();
  });
  const apps = trackLockApps();

  const options = (): LockModuleOptions => ({
    redis: servers.master.url,
    minReplicas: { replicas: 1, timeout: ACK_TIMEOUT_MS },
  });

  /**
   * A grant the live replica acknowledged: retried for a while when a loaded machine made the replica miss
   * ACK_TIMEOUT_MS (the grant is then taken back and the call refused with LockUnavailableError).
   */
  async function acknowledged(locks: LockService, key: string, acquire?: AcquireOptions): Promise<Lock> {
    const deadline = performance.now() + 10_000;
    for (;;) {
      try {
        return await locks.acquire(key, acquire);
      } catch (error) {
        if (!(error instanceof LockUnavailableError) || performance.now() > deadline) throw error;
        await sleep(100);
      }
    }
  }

  /** A service with its connection open and its scripts loaded (a first send in full, with the replica live). */
  async function service(): Promise<LockService> {
    const locks = await connected((await apps.start(options())).locks);
    await (await acknowledged(locks, uniqueKey('warm-up'))).release();
    return locks;
  }

  it("another service's waiter refused by the taken-back grant is granted soon after, not at that grant's lease end", async () => {
    const [holderSide, waiterSide] = [await service(), await service()];
    const key = uniqueKey('taken-back');
    const holder = await acknowledged(holderSide, key, { ttl: 20_000 });
    // Asleep on the holder's release, subscribed: its next attempt comes as soon as that release is announced.
    const waiting = waiterSide.acquire(key, { ttl: GRANT_TTL_MS, wait: 20_000 });
    await waiterAsleep(waiterSide, key);
    servers.replica.pause();
    let resumed: Promise<void> | undefined;
    try {
      resumed = sleep(STALL_MS).then(() => servers.replica.resume());
      // The release, then at once on the same connection an attempt of the holder's service: it is granted
      // right behind the release, ahead of the woken waiter, whose attempt it refuses. Unacknowledged, it is
      // taken back.
      const released = holder.release();
      const startedAt = performance.now();
      const refused = holderSide.acquire(key, { ttl: GRANT_TTL_MS, wait: 0 });
      expect(await released).toBe(true);
      await expect(refused).rejects.toBeInstanceOf(LockError);
      const lock = await waiting;
      const after = performance.now() - startedAt;
      expect(after, `granted ${Math.round(after)} ms after the taken-back attempt`).toBeLessThan(GRANTED_WITHIN_MS);
      await lock.release();
    } finally {
      await resumed;
      servers.replica.resume();
    }
  });
});
