import Redis from 'ioredis';
import { setTimeout as sleep } from 'node:timers/promises';
import { LockKeyNamer } from '../../lib/keys';
import { RedlockLockStore } from '../../lib/stores/redlock/redlock-lock.store';
import { trackLockApps, uniqueKey } from '../support/lock-app';
import { commandStats } from '../support/redis-stats';
import { subscribersOf, waiterAsleep } from '../support/waiters';
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
 * How a Redlock waiter learns that the grant that refused it is gone:
 * the refusing grant the nodes name must be the token its release announces, over every client family
 * (`npm run test:clients` runs this file per family), a grant taken back after a quorum granted it is
 * announced, and a release that reaches some nodes late must still wake the waiter those nodes refused.
 */
describe('Redlock waiter wake-ups over 5 real nodes', () => {
  let nodes: RedlockNodes;
  beforeAll(async () => {
    nodes = await startRedlockNodes(5);
  });
  afterAll(() => nodes?.stop());
  const apps = trackLockApps();

  it('the grant named by a refusal is the token its release announces, from one process to another', async () => {
    const holderSide = redlockStore(nodes.option);
    const waiterSide = redlockStore(nodes.option);
    const lock = freshLock('refused-by');
    const holder = freshToken();
    const watch = waiterSide.watch([lock]);
    try {
      expect((await holderSide.acquire({ keys: [lock], token: holder, ttl: 10_000 })).acquired).toBe(true);
      await watch.ready();
      const mark = watch.seen;
      const refused = await waiterSide.acquire({ keys: [lock], token: freshToken(), ttl: 10_000 });
      expect(refused.acquired).toBe(false);
      const refusedBy = refused.acquired ? undefined : refused.refusedBy;
      expect(refusedBy).toEqual([holder]);
      expect(watch.releasedSince(mark, { refusedBy })).toBe(false);
      expect(await holderSide.release([lock], holder)).toBe(true);
      // Counted once the first node's message arrives; then the refusing grant's release, and no other's.
      await eventually(async () => watch.seen > mark, 2_000, 'the release counted by the waiting store');
      expect(watch.releasedSince(mark, { refusedBy })).toBe(true);
      expect(watch.releasedSince(mark, { refusedBy: ['another-grant'] })).toBe(false);
    } finally {
      watch.close();
      await holderSide.close();
      await waiterSide.close();
    }
  });

  it('a grant taken back after a quorum granted it is announced as a release; a partial grant still is not', async () => {
    // A clock drift allowance as long as the lease: every grant's validity is over before its answers are in,
    // while the nodes keep it for its whole ttl. Every node grants it, and the store takes it back.
    const store = new RedlockLockStore(nodes.option, { driftFactor: 1 });
    const listener = new Redis(nodes.urls[4]);
    try {
      const messages: string[] = [];
      listener.on('message', (_channel: string, token: string) => messages.push(token));
      // Waiters refused for the grant meanwhile must hear that it was taken back. The grant is taken back as soon
      // as its answers are in, too soon for a real refusal: the nodes are marked as a refused attempt marks them
      // (see ACQUIRE_SCRIPT), and a release is announced where a waiter was refused (see RELEASE_SCRIPT).
      const late = freshLock('taken-back');
      await Promise.all(nodes.inspectors.map((inspector) => inspector.set(late.awaitedKey, '1', 'PX', 10_000)));
      await listener.subscribe(late.channel);
      const token = freshToken();
      await expect(store.acquire({ keys: [late], token, ttl: 5_000 })).rejects.toThrow(/validity/);
      await eventually(async () => messages.includes(token), 2_000, 'the taken-back grant announced');
      // Released everywhere: the release to a node still silent at the verdict is not awaited (it queues behind
      // that node's attempt), so it may land a moment later; a lease it missed would stay for its 5 s.
      await eventually(
        async () => (await valuesOn(nodes, late.lockKey)).every((value) => value === null),
        2_000,
        'the taken-back grant released on every node',
      );
      // Granted on 2 nodes only, against a holder on the other 3: taken back silently, as before, although its
      // refusals marked the key awaited on those 3 (and it is marked on the other 2 here).
      const partial = freshLock('partial');
      await Promise.all([3, 4].map((node) => nodes.inspectors[node].set(partial.awaitedKey, '1', 'PX', 10_000)));
      await listener.subscribe(partial.channel);
      await Promise.all([0, 1, 2].map((node) => nodes.inspectors[node].set(partial.lockKey, 'holder', 'PX', 10_000)));
      const partialToken = freshToken();
      expect((await store.acquire({ keys: [partial], token: partialToken, ttl: 10_000 })).acquired).toBe(false);
      await sleep(100);
      expect(messages).not.toContain(partialToken);
      expect(await nodes.inspectors[4].get(partial.lockKey)).toBeNull();
    } finally {
      listener.disconnect();
      await store.close();
    }
  });

  it("a writer's withdrawn intent is announced apart from its grant's release, which may carry the same token", async () => {
    const writerSide = redlockStore(nodes.option);
    const readerSide = redlockStore(nodes.option);
    const lock = freshLock('withdrawn');
    const writer = freshToken();
    const watch = readerSide.watch([lock]);
    try {
      await watch.ready();
      // The writer's grant is released (or taken back) first: its token is announced and counted, as a reader
      // was refused by it.
      expect((await writerSide.acquire({ keys: [lock], token: writer, ttl: 10_000 })).acquired).toBe(true);
      expect(
        (await readerSide.acquire({ keys: [lock], token: freshToken(), ttl: 10_000, shape: { kind: 'read' } }))
          .acquired,
      ).toBe(false);
      const beforeRelease = watch.seen;
      await writerSide.release([lock], writer);
      await eventually(async () => watch.seen > beforeRelease, 2_000, "the grant's release counted");
      // Its intent, still recorded on the nodes, is withdrawn afterwards: readers it held back must hear of it.
      await Promise.all(nodes.inspectors.map((inspector) => inspector.set(lock.writerKey, writer, 'PX', 10_000)));
      const beforeWithdrawal = watch.seen;
      await writerSide.withdraw(lock, writer, true);
      await eventually(async () => watch.seen > beforeWithdrawal, 2_000, 'the withdrawal counted');
      expect(await valuesOn(nodes, lock.writerKey)).toEqual([null, null, null, null, null]);
    } finally {
      watch.close();
      await writerSide.close();
      await readerSide.close();
    }
  });

  it('a release that reaches a quorum of nodes late still wakes the waiter they refused, long before the lease ends', async () => {
    const holderSide = await apps.start({ nodes: nodes.option });
    const waiterSide = await apps.start({ nodes: nodes.option });
    const key = uniqueKey('lagging-release');
    // A lease of 30 s, and a waiter that waits without a deadline of its own (so no last attempt at its end)
    // until cancelled after 6 s: left asleep until the lease ends, it is cancelled instead of granted.
    await holderSide.locks.acquire(key, { ttl: 30_000, autoExtend: false });
    const names = new LockKeyNamer('lock:').names(key);
    // Granted once a quorum answered: the other nodes' grants may still be on their way.
    await eventually(
      async () => (await valuesOn(nodes, names.lockKey)).every((held) => held !== null),
      2_000,
      'the lease on every node',
    );
    const value = await nodes.inspectors[0].get(names.lockKey);
    expect(value).not.toBeNull();
    const waiting = waiterSide.locks.acquire(key, { wait: Infinity, signal: AbortSignal.timeout(6_000) });
    // The waiter was refused, subscribed, and sleeps on the holder's remaining lease. Asleep means subscribed
    // on a quorum of nodes; the announcements below come from chosen nodes, so every node must be listening.
    await waiterAsleep(waiterSide.locks, key);
    await eventually(
      async () =>
        (await Promise.all(nodes.inspectors.map((node) => subscribersOf(node, names.channel)))).every(
          (count) => count >= 1,
        ),
      2_000,
      'the waiter subscribed on every node',
    );
    // The holder's release as two nodes apply it first: each deletes and announces (the waiter's process counts
    // it and wakes the waiter, whose attempt the three other nodes, not there yet, refuse for the same grant).
    const laggingNodes = [2, 3, 4];
    const scriptCalls = async (node: number): Promise<number> => {
      const stats = await commandStats(nodes.urls[node]);
      return (stats.evalsha ?? 0) + (stats.eval ?? 0);
    };
    const callsBefore = await Promise.all(laggingNodes.map(scriptCalls));
    for (const node of [0, 1]) {
      await nodes.inspectors[node].del(names.lockKey);
      await nodes.inspectors[node].publish(names.channel, value as string);
    }
    // Not before that attempt reached every lagging node and was refused there (on a loaded machine it could
    // come after the rest of the release and be granted, and the test would show nothing): then it sleeps again.
    await eventually(
      async () =>
        (await Promise.all(laggingNodes.map(scriptCalls))).every((calls, index) => calls > callsBefore[index]),
      3_000,
      "the woken waiter's attempt on every lagging node",
    );
    await waiterAsleep(waiterSide.locks, key);
    for (const node of laggingNodes) {
      await nodes.inspectors[node].del(names.lockKey);
      await nodes.inspectors[node].publish(names.channel, value as string);
    }
    // Before, the waiter slept until the holder's lease ended (measured: granted at 3980 ms of a 4 s lease;
    // here it was cancelled at 6 s).
    const lock = await waiting;
    expect(lock.keys).toEqual([key]);
    await lock.release();
  });
});
