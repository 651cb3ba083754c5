// Spec: the release hub wakes one waiter per release, counts each release once, and hands a release over to a claimed
// waiter.
import type { AcquireGrant, HandoverOffer, LockKeyNames } from '../lock-store.interface';
import { ReleaseHub } from './release-hub';

const names = (key: string): LockKeyNames => ({
  name: key,
  lockKey: key,
  fenceKey: `${key}:f`,
  channel: `${key}:c`,
  permitsKey: `${key}:p`,
  writerKey: `${key}:w`,
  awaitedKey: `${key}:a`,
});

function hubWithLog() {
  const calls: string[] = [];
  const hub = new ReleaseHub(
    {
      subscribe: async (channel) => void calls.push(`sub ${channel}`),
      unsubscribe: async (channel) => void calls.push(`unsub ${channel}`),
    },
    20,
  );
  return { hub, calls };
}

/** An offer that records its claims, and says it accepts while `accepting` holds. */
function offerFor(
  token: string,
  accepting: () => boolean = () => true,
): HandoverOffer & { claims: number; declines: number } {
  const offer = {
    token,
    ttl: 1_000,
    claims: 0,
    declines: 0,
    accepts: accepting,
    claimed: () => {
      offer.claims++;
    },
    declined: () => {
      offer.declines++;
    },
  };
  return offer;
}

const grantOf = (fence: number): AcquireGrant => ({
  acquired: true,
  fences: [fence],
  validUntil: performance.now() + 1_000,
});

describe('ReleaseHub', () => {
  it('wakes one sleeper per release, longest waiting first', async () => {
    const { hub } = hubWithLog();
    const woken: number[] = [];
    const watches = [0, 1, 2].map(() => hub.watch([names('k')]));
    const sleeping = watches.map((watch, index) => watch.next(5_000).then(() => woken.push(index)));
    hub.announce('k:c', 't1');
    await new Promise((resolve) => setImmediate(resolve));
    expect(woken).toEqual([0]);
    hub.announce('k:c', 't2');
    hub.announce('k:c', 't3');
    await Promise.all(sleeping);
    expect(woken).toEqual([0, 1, 2]);
    watches.forEach((watch) => watch.close());
  });

  it('counts one release once when several nodes announce the same token', () => {
    const { hub } = hubWithLog();
    const watch = hub.watch([names('k')]);
    hub.announce('k:c', 'same');
    hub.announce('k:c', 'same');
    hub.announce('k:c', 'other');
    expect(watch.seen).toBe(2);
    watch.close();
  });

  it('times out without a release, and rejects with the reason when the signal aborts', async () => {
    const { hub } = hubWithLog();
    const watch = hub.watch([names('k')]);
    const started = performance.now();
    await watch.next(30);
    expect(performance.now() - started).toBeGreaterThanOrEqual(25);
    const controller = new AbortController();
    const reason = new Error('cancelled');
    const waiting = watch.next(5_000, controller.signal);
    controller.abort(reason);
    await expect(waiting).rejects.toBe(reason);
    watch.close();
  });

  it('subscribes once per channel and unsubscribes after the last watcher leaves and the linger passes', async () => {
    const { hub, calls } = hubWithLog();
    const first = hub.watch([names('k')]);
    const second = hub.watch([names('k')]);
    await Promise.all([first.ready(), second.ready()]);
    expect(calls).toEqual(['sub k:c']);
    first.close();
    second.close();
    const again = hub.watch([names('k')]);
    await again.ready();
    again.close();
    expect(calls).toEqual(['sub k:c']);
    await new Promise((resolve) => setTimeout(resolve, 60));
    expect(calls).toEqual(['sub k:c', 'unsub k:c']);
  });

  it('undoes a subscription that failed (part of it may have happened), and lets a later watcher retry', async () => {
    const calls: string[] = [];
    let fail = true;
    const hub = new ReleaseHub({
      subscribe: async (channel) => {
        calls.push(`sub ${channel}`);
        if (fail) throw new Error('no quorum');
      },
      unsubscribe: async (channel) => void calls.push(`unsub ${channel}`),
    });
    const watch = hub.watch([names('k')]);
    await expect(watch.ready()).rejects.toThrow('no quorum');
    watch.close();
    expect(calls).toEqual(['sub k:c', 'unsub k:c']);
    fail = false;
    const again = hub.watch([names('k')]);
    await again.ready();
    again.close();
    expect(calls).toEqual(['sub k:c', 'unsub k:c', 'sub k:c']);
    hub.clear();
  });

  it('a release passes over multi-key sleepers (woken too) until it wakes a single-key one', async () => {
    const { hub } = hubWithLog();
    const woken: string[] = [];
    const multi = hub.watch([names('k'), names('other')]);
    const single = hub.watch([names('k')]);
    const sleeping = [
      multi.next(5_000).then(() => woken.push('multi')),
      single.next(5_000).then(() => woken.push('single')),
    ];
    expect(hub.hasSleepers([names('other')])).toBe(false); // only a multi-key waiter sleeps there
    expect(hub.hasSleepers([names('k')])).toBe(true);
    hub.announce('k:c', 't');
    await Promise.all(sleeping);
    expect(woken).toEqual(['multi', 'single']);
    multi.close();
    single.close();
    hub.clear();
  });

  it('counts a hand-over once although other releases come between it and its own PUBLISH (hot key)', () => {
    const { hub } = hubWithLog();
    const watch = hub.watch([names('k')]);
    const sleepers = [hub.watch([names('k')]), hub.watch([names('k')])];
    sleepers.forEach((sleeper) => void sleeper.next(5_000));
    hub.handOver('k:c', 'first');
    hub.handOver('k:c', 'second');
    // The PUBLISH of both releases arrive afterwards: already counted, each.
    hub.announce('k:c', 'first');
    hub.announce('k:c', 'second');
    expect(watch.seen).toBe(2);
    [watch, ...sleepers].forEach((item) => item.close());
  });

  it('a release of another process ends the local hand-over streak: it is 3 in a row, not 3 of every 4', async () => {
    const { hub } = hubWithLog();
    let woken = 0;
    const sleepers = Array.from({ length: 6 }, () => hub.watch([names('k')]));
    sleepers.forEach((sleeper) => void sleeper.next(5_000).then(() => woken++));
    for (const token of ['l1', 'l2', 'l3']) hub.handOver('k:c', token);
    hub.announce('k:c', 'from-another-process');
    await new Promise((resolve) => setImmediate(resolve));
    expect(woken).toBe(4);
    // Before the fix this local release was skipped (the streak still counted the three before).
    hub.handOver('k:c', 'l4');
    await new Promise((resolve) => setImmediate(resolve));
    expect(woken).toBe(5);
    sleepers.forEach((sleeper) => sleeper.close());
  });

  describe('claim (a release handed straight to a waiter of this process)', () => {
    it('claims the longest-waiting sleeper with an offer; its sleep ends with the grant, not its timer', async () => {
      const { hub } = hubWithLog();
      const watch = hub.watch([names('k')]);
      const offer = offerFor('waiter');
      const sleeping = watch.next(30, undefined, false, offer);
      const claim = hub.claim('k:c');
      expect(claim?.token).toBe('waiter');
      expect(offer.claims).toBe(1);
      // Past the sleeper's own timeout: claimed, it waits for the hand-over's answer.
      await new Promise((resolve) => setTimeout(resolve, 60));
      claim?.grant(grantOf(7));
      expect(await sleeping).toMatchObject({ acquired: true, fences: [7] });
      // Not a release: watchers count none.
      expect(watch.seen).toBe(0);
      watch.close({ acquired: true });
    });

    it(
      'a declined claim wakes the sleeper to attempt (its offer is told), ' +
        'and the wake passes on if it leaves unused',
      async () => {
        const { hub } = hubWithLog();
        const first = hub.watch([names('k')]);
        const second = hub.watch([names('k')]);
        const offer = offerFor('a');
        const firstSleep = first.next(5_000, undefined, false, offer);
        let secondWoken = false;
        void second.next(5_000).then(() => (secondWoken = true));
        hub.claim('k:c')?.decline();
        expect(await firstSleep).toBeUndefined();
        expect(offer.declines).toBe(1);
        // Closed as granted but without reading `seen` (it never went back to attempt): the wake was unused.
        first.close({ acquired: true });
        await new Promise((resolve) => setImmediate(resolve));
        expect(secondWoken).toBe(true);
        second.close();
      },
    );

    it('claims nobody when the first sleeper made no offer, waits for several keys, or no longer accepts', async () => {
      const { hub } = hubWithLog();
      const plain = hub.watch([names('a')]);
      void plain.next(5_000);
      expect(hub.claim('a:c')).toBeUndefined();

      const multi = hub.watch([names('b'), names('c')]);
      void multi.next(5_000, undefined, false, offerFor('multi'));
      expect(hub.claim('b:c')).toBeUndefined();

      let accepting = true;
      const cancelled = hub.watch([names('d')]);
      void cancelled.next(
        5_000,
        undefined,
        false,
        offerFor('d', () => accepting),
      );
      accepting = false;
      expect(hub.claim('d:c')).toBeUndefined();
      accepting = true;
      expect(hub.claim('d:c')?.token).toBe('d');
      [plain, multi, cancelled].forEach((watch) => watch.close());
    });

    it('shares the local budget with handOver: 3 in a row, then one release is left to the published message', () => {
      const { hub } = hubWithLog();
      const watches = Array.from({ length: 5 }, () => hub.watch([names('k')]));
      watches.forEach((watch, index) => void watch.next(5_000, undefined, false, offerFor(`w${index}`)));
      const claimed = [hub.claim('k:c'), hub.claim('k:c'), hub.claim('k:c')].map((claim) => claim?.token);
      expect(claimed).toEqual(['w0', 'w1', 'w2']);
      expect(hub.claim('k:c')).toBeUndefined();
      // The store then releases as usual; its handOver ends the streak without waking anyone here.
      hub.handOver('k:c', 'published');
      expect(hub.claim('k:c')?.token).toBe('w3');
      watches.forEach((watch) => watch.close());
    });
  });
});
