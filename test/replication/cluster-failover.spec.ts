import { setTimeout as sleep } from 'node:timers/promises';
import { type Lock, type LockService, LockUnavailableError } from '../../lib';
import { LockKeyNamer } from '../../lib/keys';
import { rejectionOf } from '../core/helpers/timing';
import { eventually } from '../support/eventually';
import { trackLockApps, uniqueKey } from '../support/lock-app';
import { type RedisClusterProcess, startRedisCluster } from '../support/redis-cluster';
import type { RedisProcess } from '../support/redis-server';
import { clusterClientLender, warmUp } from './helpers/cluster-locks';

const namer = new LockKeyNamer('lock:');
/** A lease that outlasts a failover (a master is judged failing after the 2 s node timeout). */
const TTL_MS = 10_000;
/**
 * The lease that must outlive a failover, the killed node's restart and its resync as a replica: on a loaded
 * machine these can take most of 10 s (the Sentinel test needed the same room).
 */
const SURVIVING_TTL_MS = 20_000;
/** minReplicas of the tests that ask for it: one replica within 300 ms (1 s when it must succeed, on a loaded machine). */
const MIN_REPLICAS = { replicas: 1, timeout: 300 };
const MIN_REPLICAS_PATIENT = { replicas: 1, timeout: 1_000 };

/**
 * A real Redis Cluster (3 masters, 1 replica each), shared by the tests of this file, each on a shard of
 * its own: a master is killed and its replica promoted. Replication is asynchronous here too, so what the
 * master never passed on is gone; minReplicas refuses such a grant, and a lease it let through survives.
 */
describe('Redis store on Redis Cluster: a lease through a failover', () => {
  let cluster: RedisClusterProcess;
  /** A key per shard, so each test disturbs a master of its own. */
  let keys: string[];
  const clients = clusterClientLender(() => cluster);
  beforeAll(async () => {
    cluster = await startRedisCluster(3, { replicasPerMaster: 1 });
    keys = [];
    const masters = new Set<number>();
    while (keys.length < 3) {
      const key = uniqueKey('shard');
      const { master } = await cluster.shardOf(namer.names(key).lockKey);
      if (masters.has(master.port)) continue;
      masters.add(master.port);
      keys.push(key);
    }
  });
  afterAll(async () => {
    await clients.closeAll();
    for (const node of cluster?.nodes ?? []) node.resume();
    await cluster?.stop();
  });
  const apps = trackLockApps();

  it('with minReplicas: a grant the stalled replica does not acknowledge is refused (LockUnavailableError) and undone', async () => {
    const { locks } = await apps.start({
      redis: await clients.lend('ioredis'),
      ttl: TTL_MS,
      minReplicas: MIN_REPLICAS,
    });
    const key = keys[0];
    await warmUp(locks, key);
    const { master, replicas } = await cluster.shardOf(namer.names(key).lockKey);

    replicas[0].pause();
    const error = await rejectionOf(locks.acquire(key, { wait: 0 }));
    replicas[0].resume();

    expect(error).toBeInstanceOf(LockUnavailableError);
    expect((error as Error).message).toMatch(/0 of 1 replica/);
    expect(await master.command('GET', namer.names(key).lockKey)).toBeNull();
    // With the replica back, granted. Retried while refused: a replica just thawed on the loaded machine may
    // still miss the 300 ms for an acknowledgement once or twice (acquire does not retry an unavailable store).
    const lock = await acquireOnceReachable(locks, key, 5_000);
    expect(await lock.release()).toBe(true);
  });

  it('without minReplicas: a lease granted while the replica is stalled is lost; a second holder gets the key', async () => {
    const first = await apps.start({ redis: await clients.lend('ioredis'), ttl: TTL_MS });
    const second = await apps.start({ redis: await clients.lend('ioredis'), ttl: TTL_MS });
    const key = keys[1];
    await Promise.all([warmUp(first.locks, key), warmUp(second.locks, key)]);
    const { master, replicas } = await cluster.shardOf(namer.names(key).lockKey);
    const replica = replicas[0];

    replica.pause();
    // The master drops the stalled replica's link (as after repl-timeout): from now on, writes stay on the
    // master (with SIGSTOP alone, the replica's kernel would still buffer the stream for it).
    await master.command('CLIENT', 'KILL', 'TYPE', 'replica');
    const held = await first.locks.acquire(key, { wait: 0, ttl: 30_000, autoExtend: false });
    const grantedAt = performance.now();
    await master.kill();
    const killedAt = performance.now();
    replica.resume();
    const failoverMs = await waitForPromotion(replica, killedAt);

    const taken = await acquireOnceReachable(second.locks, key, 30_000);
    const secondHolderAfterMs = performance.now() - killedAt;
    console.log(
      JSON.stringify({
        cluster: 'lease lost without minReplicas',
        failoverMs: Math.round(failoverMs),
        secondHolderAfterMs: Math.round(secondHolderAfterMs),
      }),
    );

    // Two holders at once: the first still believes in its lease, the promoted replica never saw it.
    expect(held.signal.aborted).toBe(false);
    expect(performance.now() - grantedAt).toBeLessThan(15_000);
    expect(await replica.command('GET', namer.names(key).lockKey)).toMatch(`${taken.token}|`);
    expect(taken.token).not.toBe(held.token);
    // The promoted replica never saw the first grant's fence either, and the second one's is still above it: a
    // grant's fence is at least the server's clock in µs, not only its (lagging) counter + 1.
    expect({ held: held.fence, taken: taken.fence, above: taken.fence > held.fence }).toEqual({
      held: held.fence,
      taken: taken.fence,
      above: true,
    });
    await taken.release();
  });

  it('with minReplicas: a lease granted while the replica was up survives the failover (ioredis cluster); nobody else gets the key', async () => {
    // minReplicas is refused with a node-redis Cluster (its WAIT is routed apart from the script). Before the
    // MOVED handling of the minReplicas pipeline, an ioredis Cluster holder never renewed through the new
    // master (renewal seen 10,067 ms after the kill = never, and the contender got the key).
    const holder = await apps.start({
      redis: await clients.lend('ioredis'),
      ttl: SURVIVING_TTL_MS,
      minReplicas: MIN_REPLICAS_PATIENT,
    });
    const contender = await apps.start({ redis: await clients.lend('ioredis'), ttl: TTL_MS });
    const key = keys[2];
    await Promise.all([warmUp(holder.locks, key), warmUp(contender.locks, key)]);
    const { master, replicas } = await cluster.shardOf(namer.names(key).lockKey);
    const held = await holder.locks.acquire(key, { wait: 0 });

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

    await master.kill();
    const killedAt = performance.now();
    const failoverMs = await waitForPromotion(replicas[0], killedAt);
    // The killed node comes back with its cluster identity and rejoins as the new master's replica.
    await cluster.restartNode(master);
    const replicaBackMs = performance.now() - killedAt;
    // The holder renews through the new master, acknowledged by the returned replica.
    const renewedAfterMs = (await renewedOn(replicas[0], namer.names(key).lockKey, SURVIVING_TTL_MS)) - killedAt;
    contending = false;
    await contention;
    console.log(
      JSON.stringify({
        cluster: 'lease kept with minReplicas',
        failoverMs: Math.round(failoverMs),
        replicaBackMs: Math.round(replicaBackMs),
        renewedThroughNewMasterAfterMs: Math.round(renewedAfterMs),
        contenderBusyAnswers: busyAnswers,
      }),
    );

    expect(grantsToContender).toEqual([]);
    expect(busyAnswers).toBeGreaterThan(0);
    expect(held.signal.aborted).toBe(false);
    // A renewal through the new master counts again: the returned replica acknowledges it (once its resync
    // is done: until then WAIT times out, and extend() says the store is unavailable).
    await eventually(
      () =>
        held.extend().then(
          () => true,
          (error: unknown) => (error instanceof LockUnavailableError ? false : Promise.reject(error)),
        ),
      10_000,
      'a renewal through the new master acknowledged by the returned replica',
    );
    expect(await replicas[0].command('GET', namer.names(key).lockKey)).toMatch(`${held.token}|`);
    expect(Number(await replicas[0].command('PTTL', namer.names(key).lockKey))).toBeGreaterThan(SURVIVING_TTL_MS / 2);
    expect(await held.release()).toBe(true);
    const next = await contender.locks.tryAcquire(key);
    expect(next).not.toBeNull();
    await next?.release();
  });
});

/** Resolves once `replica` says it is a master and the cluster is whole again; how long since `since`. */
async function waitForPromotion(replica: RedisProcess, since: number, timeoutMs = 30_000): Promise<number> {
  const deadline = since + timeoutMs;
  while (performance.now() < deadline) {
    const role = await replica.command('ROLE').catch(() => undefined);
    const info = await replica.command('CLUSTER', 'INFO').catch(() => '');
    if (Array.isArray(role) && role[0] === 'master' && String(info).includes('cluster_state:ok'))
      return performance.now() - since;
    await sleep(50);
  }
  throw new Error(`replica :${replica.port} not promoted within ${timeoutMs} ms`);
}

/** tryAcquire until the cluster answers again after the failover (unavailable meanwhile), then expect a grant. */
async function acquireOnceReachable(locks: LockService, key: string, withinMs: number): Promise<Lock> {
  const deadline = performance.now() + withinMs;
  for (;;) {
    try {
      const lock = await locks.tryAcquire(key);
      if (lock) return lock;
      throw new Error(`${key} is busy: the promoted replica has the lease`);
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
