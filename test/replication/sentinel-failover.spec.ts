import { eventually } from '../support/eventually';
import { setTimeout as sleep } from 'node:timers/promises';
import { type Lock, type LockService, LockUnavailableError } from '../../lib';
import { LockKeyNamer } from '../../lib/keys';
import { rejectionOf } from '../core/helpers/timing';
import { trackLockApps, uniqueKey } from '../support/lock-app';
import { type SentinelDeployment, startSentinelDeployment, waitForReplicaInSync } from '../support/redis-sentinel';
import type { RedisProcess } from '../support/redis-server';

const namer = new LockKeyNamer('lock:');
/** A lease that outlasts a failover (about 2–3 s here: the master is judged down after 1 s). */
const TTL_MS = 10_000;
/** minReplicas of the tests that ask for it: one replica within 300 ms (1 s when it must succeed, on a loaded machine). */
const MIN_REPLICAS = { replicas: 1, timeout: 300 };
const MIN_REPLICAS_PATIENT = { replicas: 1, timeout: 1_000 };
/**
 * The lease that must survive the failover: longer, because on this shared machine a failover sometimes
 * takes ~10 s (a Sentinel election retried). Renewals that go unacknowledged meanwhile keep being retried.
 * (The returned replica that acknowledged nothing for 10 s and more, in 2 of 8 runs and one CI run, had been
 * promoted by a sentinel still mid-failover: both servers masters. waitForFailover now waits for the switch
 * on every sentinel before the old master comes back; 0 of 6 loaded runs since.)
 */
const SURVIVING_TTL_MS = 20_000;

/**
 * A real Sentinel deployment (one master, one replica, three sentinels, every process on a free port of
 * 127.0.0.1), shared by the tests of this file in order: each failover ends with the killed master back as
 * the new master's replica. Replication is asynchronous, so a lease the master granted but never passed on
 * dies with the master; minReplicas refuses such a grant, and a lease it let through survives.
 */
describe('Redis store behind Sentinel: a lease through a failover', () => {
  let deployment: SentinelDeployment;
  beforeAll(async () => {
    deployment = await startSentinelDeployment();
  });
  afterAll(async () => {
    deployment?.replica.resume();
    await deployment?.stop();
  });
  afterEach(() => deployment.replica.resume());
  const apps = trackLockApps();

  /** ioredis Sentinel options: the module asks the sentinels for the master, and again after a failover. */
  const sentinelOptions = (): { sentinels: { host: string; port: number }[]; name: string } => ({
    sentinels: [...deployment.sentinels],
    name: deployment.masterName,
  });

  /** Kills the master, waits for the replica's promotion, brings the old master back as its replica. */
  async function failOver(): Promise<{ killedAt: number; failoverMs: number; replicaBackMs: number }> {
    await deployment.killMaster();
    const killedAt = performance.now();
    const failoverMs = await deployment.waitForFailover(killedAt);
    await deployment.restartOldMasterAsReplica();
    return { killedAt, failoverMs, replicaBackMs: performance.now() - killedAt };
  }

  it('with minReplicas: a grant the stalled replica does not acknowledge is refused (LockUnavailableError) and undone', async () => {
    const { locks } = await apps.start({ redis: sentinelOptions(), ttl: TTL_MS, minReplicas: MIN_REPLICAS });
    await warmUp(locks);
    const key = uniqueKey('unacknowledged');

    deployment.replica.pause();
    const startedAt = performance.now();
    const error = await rejectionOf(locks.acquire(key, { wait: 0 }));
    const refusedAfterMs = performance.now() - startedAt;
    deployment.replica.resume();

    expect(error).toBeInstanceOf(LockUnavailableError);
    expect((error as Error).message).toMatch(/0 of 1 replica/);
    // Refused after waiting for the acknowledgement (minReplicas.timeout), not at once and not forever.
    expect(refusedAfterMs).toBeGreaterThanOrEqual(MIN_REPLICAS.timeout - 10);
    expect(refusedAfterMs).toBeLessThan(3_000);
    // The grant was undone on the master: nobody is left holding it.
    expect(await deployment.master.command('GET', namer.names(key).lockKey)).toBeNull();
    console.log(
      JSON.stringify({
        sentinel: 'grant refused with minReplicas',
        refusedAfterMs: Math.round(refusedAfterMs),
        message: (error as Error).message,
      }),
    );

    // With the replica back, the same call is granted (one acknowledgement). Retried while refused: a replica
    // just thawed on the loaded machine may still miss the 300 ms for an acknowledgement once or twice.
    await waitForReplicaInSync(deployment.master, deployment.replica);
    const lock = await acquireOnceReachable(locks, key, 5_000);
    expect(await lock.release()).toBe(true);
  });

  it('without minReplicas: a lease granted while the replica is stalled is lost; a second holder gets the key', async () => {
    const first = await apps.start({ redis: sentinelOptions(), ttl: TTL_MS });
    const second = await apps.start({ redis: sentinelOptions(), ttl: TTL_MS });
    await Promise.all([warmUp(first.locks), warmUp(second.locks)]);
    const key = uniqueKey('unreplicated');

    deployment.replica.pause();
    await deployment.dropReplicaLink();
    const held = await first.locks.acquire(key, { wait: 0, ttl: 30_000, autoExtend: false });
    const grantedAt = performance.now();
    await deployment.killMaster();
    const killedAt = performance.now();
    deployment.replica.resume();
    const failoverMs = await deployment.waitForFailover(killedAt);

    const taken = await acquireOnceReachable(second.locks, key, 20_000);
    const secondHolderAfterMs = performance.now() - killedAt;
    console.log(
      JSON.stringify({
        sentinel: 'lease lost without minReplicas',
        failoverMs: Math.round(failoverMs),
        secondHolderAfterMs: Math.round(secondHolderAfterMs),
      }),
    );

    // Two holders at once: the first still holds a lease it believes valid for many more seconds…
    expect(held.signal.aborted).toBe(false);
    expect(performance.now() - grantedAt).toBeLessThan(15_000);
    // …and the new master never saw it: the key there is the second holder's lease.
    expect(await deployment.master.command('GET', namer.names(key).lockKey)).toMatch(`${taken.token}|`);
    expect(taken.token).not.toBe(held.token);
    // The promoted replica never saw the first grant's fence either, and the second one's is still above it: a
    // grant's fence is at least the server's clock in µs, not only its (lagging) counter + 1.
    expect({ held: held.fence, taken: taken.fence, above: taken.fence > held.fence }).toEqual({
      held: held.fence,
      taken: taken.fence,
      above: true,
    });
    await taken.release();
    await deployment.restartOldMasterAsReplica();
  });

  it('with minReplicas: a lease granted while the replica was up survives the failover; nobody else gets the key', async () => {
    const holder = await apps.start({
      redis: sentinelOptions(),
      ttl: SURVIVING_TTL_MS,
      minReplicas: MIN_REPLICAS_PATIENT,
    });
    const contender = await apps.start({ redis: sentinelOptions(), ttl: TTL_MS });
    await Promise.all([warmUp(holder.locks), warmUp(contender.locks)]);
    const key = uniqueKey('replicated');
    const held = await holder.locks.acquire(key, { wait: 0 });

    // The contender keeps trying all along: every answer must be "busy" or "unavailable", never a grant.
    let contending = true;
    const grantsToContender: Lock[] = [];
    let busyAnswers = 0;
    const contention = (async () => {
      while (contending) {
        try {
          const lock = await contender.locks.tryAcquire(key);
          if (lock) grantsToContender.push(lock);
          else busyAnswers++;
        } catch (error) {
          if (!(error instanceof LockUnavailableError)) throw error;
        }
        await sleep(100);
      }
    })();

    const { killedAt, failoverMs, replicaBackMs } = await failOver();
    // Answers from now on come from the new master: the old one is dead, and the server back on its port is a
    // replica, which refuses writes. Those counted before came from the old master.
    const busyBeforeFailover = busyAnswers;
    // The holder renews through the new master, acknowledged by the returned replica.
    const renewedAfterMs = (await renewedOn(deployment.master, namer.names(key).lockKey, SURVIVING_TTL_MS)) - killedAt;
    // The contender must have been answered "busy" by the new master at least once: an attempt that reached the
    // key and was refused. Until then its connection may still be reconnecting (ioredis asks the sentinels
    // again after a back-off), so the calls below wait for that rather than race it.
    await eventually(
      async () => busyAnswers > busyBeforeFailover,
      15_000,
      'the contender answered busy by the new master',
    );
    contending = false;
    await contention;
    console.log(
      JSON.stringify({
        sentinel: 'lease kept with minReplicas',
        failoverMs: Math.round(failoverMs),
        replicaBackMs: Math.round(replicaBackMs),
        renewedThroughNewMasterAfterMs: Math.round(renewedAfterMs),
        contenderBusyAnswers: busyAnswers,
        contenderBusyAnswersFromNewMaster: busyAnswers - busyBeforeFailover,
      }),
    );

    expect(grantsToContender).toEqual([]);
    expect(busyAnswers - busyBeforeFailover).toBeGreaterThan(0);
    expect(held.signal.aborted).toBe(false);
    // A renewal through the new master counts again once the returned replica acknowledges writes: it may
    // still be catching up (seen once: a renewal 1.2 s after it was back got 0 acks within 1 s).
    await eventually(
      () =>
        held.extend().then(
          () => true,
          (error: unknown) => (error instanceof LockUnavailableError ? false : Promise.reject(error)),
        ),
      10_000,
      'a renewal through the new master acknowledged by the returned replica',
    );
    expect(await deployment.master.command('GET', namer.names(key).lockKey)).toMatch(`${held.token}|`);
    expect(Number(await deployment.master.command('PTTL', namer.names(key).lockKey))).toBeGreaterThan(
      SURVIVING_TTL_MS / 2,
    );
    expect(await held.release()).toBe(true);
    const next = await contender.locks.tryAcquire(key);
    expect(next).not.toBeNull();
    await next?.release();
  });
});

/**
 * A first lock through each service, so its connections are open before the servers are disturbed; retried
 * while the deployment settles after the previous test's failover (unavailable, or not yet acknowledged).
 */
async function warmUp(locks: LockService): Promise<void> {
  await (await acquireOnceReachable(locks, uniqueKey('warm-up'), 10_000)).release();
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

/**
 * Resolves (with performance.now()) once `master` shows the lease at `lockKey` renewed: its remaining time
 * grew, which only a renewal by its holder does.
 */
async function renewedOn(master: RedisProcess, lockKey: string, withinMs: number): Promise<number> {
  const deadline = performance.now() + withinMs;
  let before = Number(await master.command('PTTL', lockKey));
  while (performance.now() < deadline) {
    await sleep(50);
    const now = Number(await master.command('PTTL', lockKey));
    if (now > before) return performance.now();
    before = now;
  }
  throw new Error(`the lease at ${lockKey} was not renewed on :${master.port} within ${withinMs} ms`);
}
