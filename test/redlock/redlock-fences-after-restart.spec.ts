import { setTimeout as sleep } from 'node:timers/promises';
import { type Lock, type LockService, LockUnavailableError } from '../../lib';
import { LockKeyNamer } from '../../lib/keys';
import { trackLockApps, uniqueKey } from '../support/lock-app';
import { eventually, type RedlockNodes, startRedlockNodes } from './helpers/redlock-nodes';

const namer = new LockKeyNamer('lock:');
const TTL_MS = 1_000;
/** The delayed-restart rule: a crashed node comes back (empty) only after more than a ttl. */
const RESTART_DELAY_MS = 1_500;

/**
 * Redlock nodes restarted empty by the delayed-restart rule, one after the other: the write-back raises only
 * the quorum that granted, so a node outside it stays behind, and once the nodes that were ahead have lost
 * their counters a quorum of nodes that are behind or empty grants next. Each node's fence is at least the
 * round's floor (the caller's clock in µs), so that grant's fence is still above every earlier one.
 */
describe('Redlock fences across nodes restarted empty (3 real Redis nodes)', () => {
  let nodes: RedlockNodes;
  beforeAll(async () => {
    nodes = await startRedlockNodes(3);
  });
  afterAll(() => nodes?.stop());
  afterEach(() => nodes.servers.forEach((server) => server.resume()));
  const apps = trackLockApps();

  it('a grant by a restarted node and one left behind is above every fence granted before', async () => {
    const { locks } = await apps.start({ nodes: nodes.option, ttl: TTL_MS });
    const key = uniqueKey('restarted');
    const { fenceKey } = namer.names(key);
    const [a, b, c] = nodes.servers;
    const fences: number[] = [];
    const grant = async (): Promise<void> => {
      const lock = await acquireOnceReachable(locks, key);
      fences.push(lock.fence);
      await lock.release();
    };

    for (let i = 0; i < 20; i++) await grant();
    // C crashes; A and B grant 5 more.
    await c.kill();
    for (let i = 0; i < 5; i++) await grant();
    // C comes back empty after the delay and answers late (paused) during 3 grants, which A and B make.
    await sleep(RESTART_DELAY_MS);
    await c.restart();
    c.pause();
    for (let i = 0; i < 3; i++) await grant();
    c.resume();
    // C runs the late attempts (and takes them back): its counter moves, but stays behind A's and B's.
    await eventually(async () => (await nodes.inspectors[2].get(fenceKey)) !== null, 5_000, "C's late grants");
    // A crashes and comes back empty after the delay, while B is paused (a tolerated minority).
    await a.kill();
    b.pause();
    await sleep(RESTART_DELAY_MS);
    await a.restart();

    // The next grant is made by A (empty) and C (behind).
    const next = await acquireOnceReachable(locks, key);
    const earlier = Math.max(...fences);
    expect({ next: next.fence, earlier, above: next.fence > earlier }).toEqual({
      next: next.fence,
      earlier,
      above: true,
    });
    expect(Number.isSafeInteger(next.fence)).toBe(true);
    expect(fences.filter((fence, i) => i > 0 && fence <= fences[i - 1])).toEqual([]);
    await next.release();
  });
});

/** acquire (wait 0) until a quorum answers again after a restart (unavailable meanwhile). */
async function acquireOnceReachable(locks: LockService, key: string): Promise<Lock> {
  let lock: Lock | undefined;
  await eventually(
    async () => {
      try {
        lock = await locks.acquire(key, { wait: 0 });
        return true;
      } catch (error) {
        if (error instanceof LockUnavailableError) return false;
        throw error;
      }
    },
    15_000,
    'a grant from a quorum',
  );
  return lock as Lock;
}
