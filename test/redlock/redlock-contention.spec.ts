import Redis from 'ioredis';
import { setTimeout as sleep } from 'node:timers/promises';
import { trackLockApps, uniqueKey } from '../support/lock-app';
import { commandStats, statsDelta } from '../support/redis-stats';
import { countScriptCalls } from '../support/script-calls';
import { waiterAsleep } from '../support/waiters';
import {
  eventually,
  freshLock,
  freshToken,
  redlockStore,
  type RedlockNodes,
  startRedlockNodes,
  valuesOn,
} from './helpers/redlock-nodes';

/**
 * Resolves once every node holds `key` for one holder: a late answer still lands, and the tests that then
 * clear or pause 2 nodes count on the 3 left holding it (a holder short of one of them breaks their premise).
 */
async function holderOnEveryNode(nodes: RedlockNodes, key: string): Promise<void> {
  await eventually(
    async () => {
      const values = await valuesOn(nodes, `lock:{${key}}`);
      return values[0] !== null && values.every((value) => value === values[0]);
    },
    2_000,
    'the holder on all 5 nodes',
  );
}

/** Redlock under contention and paused minorities: waiters that neither spin nor wait for the paused. */
describe('Redlock over 5 real nodes, contended', () => {
  let nodes: RedlockNodes;
  beforeAll(async () => {
    nodes = await startRedlockNodes(5);
  });
  afterAll(() => nodes?.stop());
  const apps = trackLockApps();

  it('undoing a partial grant announces nothing: no release message, no waiter woken for nothing', async () => {
    const store = redlockStore(nodes.option);
    const listener = new Redis(nodes.urls[4]);
    try {
      const lock = freshLock('undo-silent');
      // Another client holds the key on 3 nodes (a quorum): our attempt is granted on the other 2 and undone.
      await Promise.all([0, 1, 2].map((node) => nodes.inspectors[node].set(lock.lockKey, 'holder', 'PX', 10_000)));
      const messages: string[] = [];
      listener.on('message', (_channel: string, token: string) => messages.push(token));
      await listener.subscribe(lock.channel);
      const outcome = await store.acquire({ keys: [lock], token: freshToken(), ttl: 10_000 });
      expect(outcome.acquired).toBe(false);
      await sleep(100);
      expect(await nodes.inspectors[4].get(lock.lockKey)).toBeNull();
      expect(messages).toEqual([]);
    } finally {
      listener.disconnect();
      await store.close();
    }
  });

  it('waiters do not spin while the holder holds a bare quorum (3 of 5 nodes)', async () => {
    const holderSide = await apps.start({ nodes: nodes.option });
    const waiterSide = await apps.start({ nodes: nodes.option });
    const otherSide = await apps.start({ nodes: nodes.option });
    const key = uniqueKey('bare-quorum');
    // ttl 30 s: its first renewal (a script call on node 0) is due at 10 s, far past the idle window below even
    // after a stall of the loaded machine (at ttl 10 s it was due at 3.3 s).
    // Connections are set up first: a first command that waits for its connection may outlast its node timeout
    // under a stall of the loaded machine, and the holder would then hold fewer than the 5 nodes counted on below.
    await (await holderSide.locks.acquire(uniqueKey('warm-up'))).release();
    const held = await holderSide.locks.acquire(key, { ttl: 30_000 });
    // Every node holds it (a late answer still lands), so that the 2 deleted below leave a bare quorum of 3.
    await holderOnEveryNode(nodes, key);
    // The README's "2 of 5 killed, lock renewed on the other 3", or a minority restarted empty.
    await Promise.all([3, 4].map((node) => nodes.inspectors[node].del(`lock:{${key}}`)));
    const waiters = Array.from({ length: 8 }, () =>
      waiterSide.locks.acquire(key, { wait: 5_000 }).then(
        (lock) => lock.release(),
        () => undefined,
      ),
    );
    await sleep(1_000);
    // Script calls on node 0: INFO commandstats, plus what batches carried beyond their one EVALSHA each (see
    // batchedScriptCalls).
    const batched = countScriptCalls([nodes.servers[0].port]);
    let idle: number;
    let busy: number;
    try {
      const scriptCallsSince = async (before: { stats: Record<string, number>; beyond: number }): Promise<number> => {
        const beyond = batched.beyondCommands;
        const delta = statsDelta(before.stats, await commandStats(nodes.urls[0]));
        return (delta.evalsha ?? 0) + (delta.eval ?? 0) + beyond - before.beyond;
      };
      const mark = async (): Promise<{ stats: Record<string, number>; beyond: number }> => {
        const beyond = batched.beyondCommands;
        return { stats: await commandStats(nodes.urls[0]), beyond };
      };
      // Asleep on the holder's lease, the waiters cost nothing.
      let before = await mark();
      await sleep(500);
      idle = await scriptCallsSince(before);
      // Another instance tries the key ten times a second (a @Locked({ wait: 0 }) route, say): each attempt is
      // granted on the 2 free nodes and undone. Before the fix each undo published a release that woke a
      // waiter, whose own attempt and undo woke the next: 589–3003 script calls on a node instead of 10.
      before = await mark();
      for (let i = 0; i < 10; i++) {
        expect(await otherSide.locks.tryAcquire(key)).toBeNull();
        await sleep(100);
      }
      busy = await scriptCallsSince(before);
    } finally {
      batched.stop();
    }
    console.log(`bare quorum, 8 waiters asleep: ${idle} script calls in 0.5 s; beside 10 tryAcquire in 1 s: ${busy}`);
    expect(idle).toBe(0);
    expect(busy).toBeLessThan(40);
    await held.release();
    await Promise.all(waiters);
  });

  it('hot key across two processes: each release is counted once by each process, not once per node', async () => {
    const sides = await Promise.all([0, 1].map(() => apps.start({ nodes: nodes.option })));
    const key = uniqueKey('hot-two-processes');
    const warmUp = 100;
    const window = 500;
    const windows = 3;
    let done = 0;
    // Redis' counters at the start of each window (and at the end of the last), plus what batches carried
    // beyond their one EVALSHA each (INFO commandstats counts a batch once): the acquisitions done while a
    // snapshot was on its way count half before, half after.
    const batched = countScriptCalls([nodes.servers[0].port]);
    const snapshots: Promise<{ stats: Record<string, number>; beyond: number; done: number }>[] = [];
    const snapshot = (): void => {
      const sentAt = done;
      const beyond = batched.beyondCommands;
      snapshots.push(commandStats(nodes.urls[0]).then((stats) => ({ stats, beyond, done: (sentAt + done) / 2 })));
    };
    let marks: { stats: Record<string, number>; beyond: number; done: number }[];
    try {
      await Promise.all(
        Array.from({ length: 16 }, async (_, caller) => {
          while (done < warmUp + windows * window) {
            await (await sides[caller % 2].locks.acquire(key, { wait: 60_000 })).release();
            if (++done >= warmUp && (done - warmUp) % window === 0 && done < warmUp + windows * window) snapshot();
          }
        }),
      );
      snapshot();
      marks = await Promise.all(snapshots);
    } finally {
      batched.stop();
    }
    const perAcquisition = marks.slice(1).map((mark, i) => {
      const delta = statsDelta(marks[i].stats, mark.stats);
      return ((delta.evalsha ?? 0) + (delta.eval ?? 0) + mark.beyond - marks[i].beyond) / (mark.done - marks[i].done);
    });
    const median = [...perAcquisition].sort((a, b) => a - b)[Math.floor(perAcquisition.length / 2)];
    // A release reaches each process once per node (5 PUBLISH) and as a local hand-over. Before the fixes
    // the hub remembered one token, so interleaved releases were counted again and again (and undos were
    // announced as releases), each time sending waiters to attempt for nothing: 12.6 script calls on a node
    // per acquisition; after: 3.9-4.3 over module-owned connections, 4.8-5.2 over lent node-redis clients
    // (acquire and release, the other process's losing attempt and its undo). The bar sits between the two,
    // with room for a loaded machine, where the two processes' attempts collide more often. The median of
    // three windows: a defect inflates every window, while a burst of load on this shared machine (five
    // servers on two cores: one node lagging behind a release splits the two processes' votes) inflates one.
    // A second defect read 11-17, in 5 of 13 runs over lent node-redis clients and once over ioredis: a
    // refused waiter attempted again after any release counted during its attempt, so on this hot key one
    // process's waiters all attempted again after every release and none slept (the other process got next
    // to no grants); now only a release of the grant that refused it does (AcquireOutcome.refusedBy).
    console.log(
      `Redlock 5, 2 processes x 8 callers: ${perAcquisition.map((value) => value.toFixed(2)).join(' / ')} script calls on a node per acquisition in ${windows} windows of ${window}`,
    );
    expect(marks).toHaveLength(windows + 1);
    expect(median).toBeLessThan(8);
  });

  it('a busy verdict does not wait for paused minority nodes (tryAcquire, wait: 0, wait: 1500)', async () => {
    // A node timeout of 5 s (the default here is 1 s): a stall of the loaded machine shorter than that cannot turn
    // the live nodes' answers into timeouts (LockUnavailableError), and the defect reads a whole 5 s.
    const holderSide = await apps.start({ nodes: nodes.option, commandTimeout: 5_000 });
    const waiterSide = await apps.start({ nodes: nodes.option, commandTimeout: 5_000 });
    const key = uniqueKey('paused-minority');
    // Both sides' connections are set up first: a paused node would make a first connect wait instead, and a
    // holder whose command to a node still waited for its connection could find that node taken by the
    // waiter's first attempt. The holder would then hold only 2 of the 3 live nodes: no quorum of refusals
    // without the paused ones, so every call waited a whole node timeout (a clean-clone CI run read 5,014 /
    // 5,009 / 5,007 ms). The premise is checked: the holder on all 5 nodes.
    await (await holderSide.locks.acquire(uniqueKey('warm-up'))).release();
    await (await waiterSide.locks.acquire(uniqueKey('warm-up'))).release();
    const held = await holderSide.locks.acquire(key, { ttl: 10_000 });
    await holderOnEveryNode(nodes, key);
    nodes.servers[3].pause();
    nodes.servers[4].pause();
    try {
      let startedAt = performance.now();
      expect(await waiterSide.locks.tryAcquire(key)).toBeNull();
      const tryAcquireMs = performance.now() - startedAt;

      startedAt = performance.now();
      await expect(waiterSide.locks.acquire(key, { wait: 0 })).rejects.toThrow('not acquired');
      const noWaitMs = performance.now() - startedAt;

      startedAt = performance.now();
      await expect(waiterSide.locks.acquire(key, { wait: 1_500 })).rejects.toThrow('not acquired');
      const waitedMs = performance.now() - startedAt;

      console.log(
        `2 of 5 paused: tryAcquire ${tryAcquireMs.toFixed(0)} ms, wait 0 ${noWaitMs.toFixed(0)} ms, wait 1500 ${waitedMs.toFixed(0)} ms`,
      );
      // Before the fix: a whole node timeout for tryAcquire and wait 0 (~1005 ms at 1 s, ~5005 ms at 5 s), and
      // the wait overran by one. The bounds leave room for a 2 s stall of the loaded machine, and stay below those.
      expect(tryAcquireMs).toBeLessThan(2_000);
      expect(noWaitMs).toBeLessThan(2_000);
      expect(waitedMs).toBeLessThan(1_500 + 2_000);
    } finally {
      nodes.servers[3].resume();
      nodes.servers[4].resume();
      // Not what this test checks: a failed release must not replace the assertion error above (afterEach closes the apps).
      await held.release().catch((error: unknown) => console.warn(`held.release() after resume: ${String(error)}`));
    }
  });
});

/** A wake-up after a release from a bare quorum needs a holder on exactly 2 of 3 nodes. */
describe('Redlock over 3 real nodes, contended', () => {
  let nodes: RedlockNodes;
  beforeAll(async () => {
    nodes = await startRedlockNodes(3);
  });
  afterAll(() => nodes?.stop());
  const apps = trackLockApps();

  it('the next waiter gets the key at once after release when the holder was on 2 of 3 nodes (no lost wake-up)', async () => {
    const holderSide = await apps.start({ nodes: nodes.option });
    const waiterSide = await apps.start({ nodes: nodes.option });
    const key = uniqueKey('lost-wakeup');
    // The holder's lease ends by itself (it is never released). At 1 s, one CI run never saw the first waiter
    // asleep: 3 s leave a loaded machine room, and a waiter through before it was seen asleep also passes the
    // barrier below. What would be a defect, a waiter that never sleeps, is counted instead: its attempts.
    await holderSide.locks.acquire(key, { ttl: 3_000, autoExtend: false });
    await nodes.inspectors[2].del(`lock:{${key}}`);
    const scriptCalls = async (): Promise<number> => {
      const stats = await commandStats(nodes.urls[0]);
      return (stats.evalsha ?? 0) + (stats.eval ?? 0);
    };
    const callsBefore = await scriptCalls();
    // The first waiter's attempts are granted on node 2 and undone; before the fix each undo published the
    // waiter's token, the hub kept it as the last release seen, and the waiter's own release, with the same
    // token, was then dropped as a repeat: no hand-over, no wake-up.
    const first = waiterSide.locks.acquire(key, { wait: 10_000, ttl: 5_000 });
    // Asleep, or (after a stall longer than the lease) already granted: either way the second comes after it.
    await waiterAsleep(waiterSide.locks, key, { orSettled: first });
    // Queued behind the first (no barging): it sleeps until a release wakes it, or else for its own ttl (the
    // end of a lease it never read), 15 s from now.
    const second = waiterSide.locks.acquire(key, { wait: 20_000, ttl: 15_000 });
    const lock = await first;
    // Sleeping on the holder's lease: its first attempt and the one at the lease's end, the second waiter's
    // first attempt, perhaps one more after a wake-up (a waiter that retried without sleeping made hundreds).
    const attempts = (await scriptCalls()) - callsBefore;
    expect(attempts).toBeLessThanOrEqual(8);
    const releasedAt = performance.now();
    await lock.release();
    const next = await second;
    const handOverMs = performance.now() - releasedAt;
    // Before the fix the second waiter slept its ttl (4.2 s with a 1 s holder lease and ttl 5 s; here ~12 s);
    // with the holder on all 3 nodes: ~2 ms.
    console.log(
      `holder on 2 of 3: the next waiter got the key ${handOverMs.toFixed(0)} ms after the release (${attempts} script calls on node 0 before)`,
    );
    expect(handOverMs).toBeLessThan(3_000);
    await next.release();
  });
});

/**
 * With 2 of 5 nodes killed and the holder's lease left on 2 of the 3 others (a third node restarted empty), no
 * lease holds a quorum of the nodes that answer. Contending attempts must neither spin (retry every few ms) nor
 * split against each other's partial grants round after round: once the leftover leases run out, one gets it.
 */
describe('Redlock with 2 of 5 nodes killed and a holder left on fewer than a quorum', () => {
  let nodes: RedlockNodes;
  beforeAll(async () => {
    nodes = await startRedlockNodes(5);
  });
  afterAll(() => nodes?.stop());
  const apps = trackLockApps();

  it('waiters neither spin nor livelock: they get the key once the leftover leases run out', async () => {
    const holderSide = await apps.start({ nodes: nodes.option });
    const waiterSide = await apps.start({ nodes: nodes.option });
    const key = uniqueKey('doomed-holder');
    const held = await holderSide.locks.acquire(key, { ttl: 1_500 });
    await (await waiterSide.locks.acquire(uniqueKey('warm-up'))).release();
    await nodes.inspectors[2].del(`lock:{${key}}`);
    await Promise.all([nodes.servers[3].kill(), nodes.servers[4].kill()]);
    const startedAt = performance.now();
    const waiters = Array.from({ length: 8 }, () =>
      waiterSide.locks.acquire(key, { wait: 8_000, ttl: 3_000 }).then(
        async (lock) => {
          const gotItAt = performance.now() - startedAt;
          await lock.release();
          return gotItAt;
        },
        (error: Error) => error.name,
      ),
    );
    // The holder cannot renew on a quorum any more: its lease is lost, and its leases on nodes 0 and 1 run
    // out a ttl after its last renewal there (about 3 s from now). Meanwhile, once the dead nodes are known
    // to fail (their first commands time out after 600 ms), the waiters' cost:
    await sleep(1_000);
    // INFO commandstats, plus what batches carried beyond their one EVALSHA each.
    const batched = countScriptCalls([nodes.servers[0].port]);
    let scriptCalls: number;
    try {
      const before = await commandStats(nodes.urls[0]);
      const beyondBefore = batched.beyondCommands;
      await sleep(1_500);
      const beyond = batched.beyondCommands - beyondBefore;
      const delta = statsDelta(before, await commandStats(nodes.urls[0]));
      scriptCalls = (delta.evalsha ?? 0) + (delta.eval ?? 0) + beyond;
    } finally {
      batched.stop();
    }
    const outcomes = await Promise.all(waiters);
    // Before the fix: ~450 script calls on a node in those 1.5 s, and every waiter LockNotAcquiredError after
    // 8 s although the key was free from about 3 s; after: a few a second, and every waiter had the key.
    console.log(
      `2 of 5 killed, holder on 2 of the rest: ${scriptCalls} script calls in 1.5 s; waiters got the key at: ` +
        outcomes.map((outcome) => (typeof outcome === 'number' ? `${outcome.toFixed(0)} ms` : outcome)).join(', '),
    );
    expect(held.signal.aborted).toBe(true);
    expect(scriptCalls).toBeLessThan(75);
    for (const outcome of outcomes) expect(typeof outcome, String(outcome)).toBe('number');
  });
});
