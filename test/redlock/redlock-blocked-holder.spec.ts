import { setTimeout as sleep } from 'node:timers/promises';
import { LockLostError, LockUnavailableError } from '../../lib';
import { LockKeyNamer } from '../../lib/keys';
import { trackLockApps, uniqueKey } from '../support/lock-app';
import { blockEventLoop, eventually, type RedlockNodes, startRedlockNodes, valuesOn } from './helpers/redlock-nodes';

const TTL_MS = 500;
const namer = new LockKeyNamer('lock:');

/**
 * Kleppmann's paused client: a holder whose event loop is blocked (a long GC pause, a CPU-bound task)
 * longer than the ttl must not go on believing it holds the lock. Its validity is measured on the
 * monotonic clock from before the grant was requested, so the first thing that runs once the loop is free
 * is the validity deadline, which aborts the lock's signal.
 */
describe('Redlock holder with a blocked event loop (5 real Redis nodes)', () => {
  let nodes: RedlockNodes;
  beforeAll(async () => {
    nodes = await startRedlockNodes(5);
  });
  afterAll(() => nodes?.stop());
  const apps = trackLockApps();

  it('blocked longer than the ttl: right after it unblocks, the signal is aborted with LockLostError', async () => {
    const holder = await apps.start({ nodes: nodes.option, ttl: TTL_MS });
    const other = await apps.start({ nodes: nodes.option, ttl: TTL_MS });
    const key = uniqueKey('blocked');
    // Connected, scripts loaded: warm-ups with a 5 s lease have a 1 s command timeout, while the module's 500 ms
    // ttl leaves 100 ms, too little for a first command that also connects to the nodes.
    for (const side of [holder, other])
      await (await side.locks.acquire(uniqueKey('warm-up'), { ttl: 5_000 })).release();
    const lock = await holder.locks.acquire(key);
    expect(lock.signal.aborted).toBe(false);

    blockEventLoop(TTL_MS * 2.5);
    // One turn of the event loop: the first timers to run are the overdue ones.
    await sleep(0);

    expect(lock.signal.aborted).toBe(true);
    expect(lock.signal.reason).toBeInstanceOf(LockLostError);
    await expect(lock.extend()).rejects.toBeInstanceOf(LockLostError);
    // It really was gone: the leases expired in Redis during the block, and another client takes the key (for
    // 5 s, so a stall of the test process cannot cost it the lease before its signal is checked).
    const next = await other.locks.acquire(key, { wait: 0, ttl: 5_000 });
    await expect(lock.release()).resolves.toBe(false);
    expect(next.signal.aborted).toBe(false);
    await next.release();
  });

  it('blocked during the acquisition beyond the ttl: the late quorum is refused (validity over) and undone at once', async () => {
    // Per-node timeouts far longer than the block, so the answers are read and the validity check decides.
    const { locks } = await apps.start({ nodes: nodes.option, ttl: TTL_MS, commandTimeout: 5_000 });
    const key = uniqueKey('blocked-acquire');
    await (await locks.acquire(uniqueKey('warm-up'))).release();

    // The attempt starts (its clock too), then the loop blocks before the nodes' answers can be read.
    const acquiring = locks.acquire(key, { wait: 0 });
    blockEventLoop(TTL_MS * 2);
    const error = await acquiring.then(
      () => undefined,
      (rejection: unknown) => rejection,
    );
    expect(error).toBeInstanceOf(LockUnavailableError);
    expect((error as Error).message).toMatch(/validity/);
    expect(await valuesOn(nodes, namer.names(key).lockKey)).toEqual([null, null, null, null, null]);
    const lock = await locks.acquire(key, { wait: 0 });
    await expect(lock.release()).resolves.toBe(true);
  });

  it('blocked during the acquisition with the default per-node timeout: no lock either, and no key outlives the ttl', async () => {
    const { locks } = await apps.start({ nodes: nodes.option, ttl: TTL_MS });
    const key = uniqueKey('blocked-acquire-timeouts');
    // Connected, scripts loaded; a 5 s lease gives the warm-up a 1 s command timeout (the module's ttl: 100 ms).
    await (await locks.acquire(uniqueKey('warm-up'), { ttl: 5_000 })).release();

    const acquiring = locks.acquire(key, { wait: 0 });
    // Longer than the per-node timeout: once unblocked, the timeouts fire before any answer is read.
    blockEventLoop(TTL_MS * 2);
    await expect(acquiring).rejects.toBeInstanceOf(LockUnavailableError);
    // The releases were fired behind the acquires: the keys go well before their ttl would end them.
    await eventually(
      async () => (await valuesOn(nodes, namer.names(key).lockKey)).every((value) => value === null),
      TTL_MS / 2,
      'attempt undone',
    );
  });
});
