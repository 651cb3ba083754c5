import { setTimeout as sleep } from 'node:timers/promises';
import { type Lock, type LockService, LockUnavailableError } from '../../lib';
import { LockKeyNamer } from '../../lib/keys';
import { trackLockApps, uniqueKey } from '../support/lock-app';
import { type SentinelDeployment, startSentinelDeployment } from '../support/redis-sentinel';

const namer = new LockKeyNamer('lock:');
/** Long enough to outlast a failover (about 2–3 s here: the master is judged down after 1 s). */
const TTL_MS = 30_000;

/**
 * A real Sentinel deployment (one master, one replica, three sentinels on free ports of 127.0.0.1, each
 * test its own): what a failover does to a lease. Replication is asynchronous, so a lease the master
 * granted but never passed on dies with the master.
 */
describe('Redis store behind Sentinel: a lease through a failover', () => {
  let deployment: SentinelDeployment;
  beforeEach(async () => {
    deployment = await startSentinelDeployment();
  });
  afterEach(async () => {
    deployment?.replica.resume();
    await deployment?.stop();
  });
  const apps = trackLockApps();

  /** ioredis Sentinel options: the module asks the sentinels for the master, and again after a failover. */
  const sentinelOptions = (): { sentinels: { host: string; port: number }[]; name: string } => ({
    sentinels: [...deployment.sentinels],
    name: deployment.masterName,
  });

  it('without minReplicas: a lease granted while the replica is stalled is lost; a second holder gets the key', async () => {
    const first = await apps.start({ redis: sentinelOptions(), ttl: TTL_MS });
    const second = await apps.start({ redis: sentinelOptions(), ttl: TTL_MS });
    await Promise.all([warmUp(first.locks), warmUp(second.locks)]);
    const key = uniqueKey('unreplicated');

    deployment.replica.pause();
    await deployment.dropReplicaLink();
    const held = await first.locks.acquire(key, { wait: 0, autoExtend: false });
    const grantedAt = performance.now();
    await deployment.killMaster();
    const killedAt = performance.now();
    deployment.replica.resume();
    const failoverMs = await deployment.waitForFailover(killedAt);

    const taken = await acquireOnceReachable(second.locks, key, 20_000);
    const secondHolderAfterMs = performance.now() - killedAt;
    console.log(JSON.stringify({ sentinel: 'lease lost without minReplicas', failoverMs: Math.round(failoverMs), secondHolderAfterMs: Math.round(secondHolderAfterMs) }));

    // Two holders at once: the first still holds a lease it believes valid for many more seconds…
    expect(held.signal.aborted).toBe(false);
    expect(performance.now() - grantedAt).toBeLessThan(TTL_MS / 2);
    // …and the new master never saw it: the key there is the second holder's lease.
    expect(await deployment.master.command('GET', namer.names(key).lockKey)).toBe(taken.token);
    expect(taken.token).not.toBe(held.token);
    await taken.release();
  });
});

/** A first lock through each service, so its connections are open before the servers are disturbed. */
async function warmUp(locks: LockService): Promise<void> {
  await (await locks.acquire(uniqueKey('warm-up'), { wait: 0 })).release();
}

/** tryAcquire until Redis answers again after a failover (unavailable meanwhile), then expect a grant. */
async function acquireOnceReachable(locks: LockService, key: string, withinMs: number): Promise<Lock> {
  const deadline = performance.now() + withinMs;
  for (;;) {
    try {
      const lock = await locks.tryAcquire(key);
      if (lock) return lock;
      throw new Error(`${key} is busy: the new master has the lease`);
    } catch (error) {
      if (!(error instanceof LockUnavailableError) || performance.now() > deadline) throw error;
      await sleep(100);
    }
  }
}
