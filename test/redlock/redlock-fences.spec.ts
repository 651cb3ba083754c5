import { LockKeyNamer } from '../../lib/keys';
import { trackLockApps, uniqueKey } from '../support/lock-app';
import { type RedlockNodes, startRedlockNodes } from './helpers/redlock-nodes';

const namer = new LockKeyNamer('lock:');

/**
 * Each node keeps its own fence counter, so a grant made by another quorum than the last one would see
 * lower counters. The store returns the maximum over the granting quorum and writes it back to a quorum of
 * holders first; these grants rotate the quorum over all five nodes by pausing a different pair each time.
 */
describe('Redlock fences across moving quorums (5 real Redis nodes, SIGSTOP)', () => {
  let nodes: RedlockNodes;
  beforeAll(async () => {
    nodes = await startRedlockNodes(5);
  });
  afterAll(() => nodes?.stop());
  afterEach(() => nodes.servers.forEach((server) => server.resume()));
  const apps = trackLockApps();

  it('fences strictly increase when successive grants use different quorums; a raised counter is written back', async () => {
    const { locks } = await apps.start({ nodes: nodes.option, ttl: 2_000 });
    const key = uniqueKey('fenced');
    const { fenceKey } = namer.names(key);
    await (await locks.acquire(uniqueKey('warm-up'))).release();
    // Node 4's counter is far ahead of the others (as if it alone had seen many grants).
    await nodes.inspectors[4].set(fenceKey, '1000');

    /** The paused pair of each grant; the granting quorum is the other three. */
    const pausedPairs = [
      [0, 1], // quorum {2,3,4}: 4 is at 1000, so 2 and 3 must be raised
      [3, 4], // quorum {0,1,2}: only node 2 was raised
      [1, 2], // quorum {0,3,4}
      [0, 4], // quorum {1,2,3}
      [2, 3], // quorum {0,1,4}
      [1, 3], // quorum {0,2,4}
    ];
    const fences: number[] = [];
    for (const [index, pair] of pausedPairs.entries()) {
      nodes.servers.forEach((server, node) => (pair.includes(node) ? server.pause() : server.resume()));
      const lock = await locks.acquire(key, { wait: 0 });
      fences.push(lock.fence);
      const live = [0, 1, 2, 3, 4].filter((node) => !pair.includes(node));
      const counters = await Promise.all(live.map((node) => nodes.inspectors[node].get(fenceKey)));
      if (index === 0) {
        // The write-back: the two nodes behind were raised to the grant's fence before it was returned.
        expect(lock.fence).toBe(1001);
        expect(counters).toEqual(['1001', '1001', '1001']);
      }
      // A quorum of the holders has a counter at least the grant's fence.
      expect(counters.filter((counter) => Number(counter) >= lock.fence).length).toBeGreaterThanOrEqual(3);
      await lock.release();
    }
    const notRising = fences.filter((fence, i) => i > 0 && fence <= fences[i - 1]);
    expect({ fences, notRising }).toEqual({ fences, notRising: [] });
  });
});
