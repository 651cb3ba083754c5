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
function offerFor(token: string, accepting: () => boolean = () => true): HandoverOffer & { claims: number; declines: number } {
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

const grantOf = (fence: number): AcquireGrant => ({ acquired: true, fences: [fence], validUntil: performance.now() + 1_000 });

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
    const sleeping = [multi.next(5_000).then(() => woken.push('multi')), single.next(5_000).then(() => woken.push('single'))];
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

  it("a release of another process ends the local hand-over streak: it is 3 in a row, not 3 of every 4", async () => {
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
      watch.close(true);
    });

    it('a declined claim wakes the sleeper to attempt (its offer is told), and the wake passes on if it leaves unused', async () => {
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
      first.close(true);
      await new Promise((resolve) => setImmediate(resolve));
      expect(secondWoken).toBe(true);
      second.close();
    });

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
      void cancelled.next(5_000, undefined, false, offerFor('d', () => accepting));
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

describe('ReleaseWatch.releasedSince: whether a refused waiter attempts again at once', () => {
  it('only for a release of a grant that refused it, one without a token, or one the window forgot', () => {
    const { hub } = hubWithLog();
    const key = names('k');
    const watch = hub.watch([key]);
    const mark = watch.seen;
    expect(watch.releasedSince(mark, ['holder-B'])).toBe(false);
    // An earlier grant's release, counted while the attempt was refused by holder B: it freed nothing for it.
    hub.announce(key.channel, 'holder-A');
    hub.announce(key.channel, 'holder-A');
    expect(watch.releasedSince(mark, ['holder-B'])).toBe(false);
    // Without the holders that refused it (another store, a permit): any release, as before.
    expect(watch.releasedSince(mark, undefined)).toBe(true);
    // The refusing grant's own release.
    hub.announce(key.channel, 'holder-B');
    expect(watch.releasedSince(mark, ['holder-B'])).toBe(true);
    // Releases before the mark do not count; reading releasedSince marks nothing (seen still moves on).
    const later = watch.seen;
    expect(later).toBe(mark + 2);
    expect(watch.releasedSince(later, ['holder-B'])).toBe(false);
    // A release announced without a token may have been anyone's.
    hub.announce(key.channel);
    expect(watch.releasedSince(later, ['holder-B'])).toBe(true);
    watch.close();
  });

  it('more releases than the window remembers may include the refusing grant', () => {
    const { hub } = hubWithLog();
    const key = names('k');
    const watch = hub.watch([key]);
    const mark = watch.seen;
    for (let i = 0; i < 70; i++) hub.announce(key.channel, `holder-${i}`);
    expect(watch.releasedSince(mark, ['holder-gone'])).toBe(true);
    const recent = watch.seen;
    hub.announce(key.channel, 'holder-x');
    expect(watch.releasedSince(recent, ['holder-gone'])).toBe(false);
    watch.close();
  });
});

/** Lets the promise jobs of wake-ups already made run (a sleep that was not woken stays pending). */
const settled = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

describe('A release counted before the attempt, that lagging nodes refused it for (Redlock)', () => {
  it('releasedSince: another node announcing it during the attempt sends the waiter to attempt again', () => {
    const { hub } = hubWithLog();
    const key = names('k');
    const watch = hub.watch([key]);
    hub.announce(key.channel, 'holder-H'); // the first node to apply H's release: counted, wakes the waiter
    const mark = watch.seen;
    expect(watch.releasedSince(mark, ['holder-H'])).toBe(false);
    // Another node's announcement of another, earlier release is no reason.
    hub.announce(key.channel, 'holder-A');
    const mark2 = watch.seen;
    hub.announce(key.channel, 'holder-A');
    expect(watch.releasedSince(mark2, ['holder-H'])).toBe(false);
    // A lagging node applies H's release while the attempt it refused is answered: a repeat, not counted.
    hub.announce(key.channel, 'holder-H');
    expect(watch.releasedSince(mark2, ['holder-H'])).toBe(true);
    // Heard before the next mark (which a repeat does not move): no reason any more.
    const mark3 = watch.seen;
    expect(mark3).toBe(mark2);
    expect(watch.releasedSince(mark3, ['holder-H'])).toBe(false);
    watch.close();
  });

  it('next(refusedBy): a later node announcing that release wakes the sleeper; the repeats of a live holder\'s release wake nobody more', async () => {
    const { hub } = hubWithLog();
    const key = names('k');
    const lagging = hub.watch([key]);
    const other = hub.watch([key]);
    hub.announce(key.channel, 'holder-H');
    // `other` was refused by a live holder L (not released yet); `lagging` by H, whose release was already counted.
    let otherWoken = false;
    const otherSleep = other.next(5_000, undefined, false, undefined, ['holder-L']).then(() => {
      otherWoken = true;
    });
    let laggingWoken = false;
    const laggingSleep = lagging.next(5_000, undefined, false, undefined, ['holder-H']).then(() => {
      laggingWoken = true;
    });
    hub.announce(key.channel, 'holder-H'); // a lagging node applied H's release
    await settled();
    expect(laggingWoken).toBe(true);
    expect(otherWoken).toBe(false);
    // L's release: its first announcement wakes `other`; its repeats from the other nodes wake no one else.
    const third = hub.watch([key]);
    let thirdWoken = false;
    const thirdSleep = third.next(5_000, undefined, false, undefined, ['holder-L']).then(() => {
      thirdWoken = true;
    });
    hub.announce(key.channel, 'holder-L');
    for (let node = 0; node < 4; node++) hub.announce(key.channel, 'holder-L');
    await settled();
    expect(otherWoken).toBe(true);
    expect(thirdWoken).toBe(false);
    // The next release wakes it.
    hub.announce(key.channel, 'holder-M');
    await settled();
    expect(thirdWoken).toBe(true);
    await Promise.all([laggingSleep, otherSleep, thirdSleep]);
    third.close();
    lagging.close();
    other.close();
  });

  it('the window keeps each token with its own stamps as older ones leave it', () => {
    const { hub } = hubWithLog();
    const key = names('k');
    const watch = hub.watch([key]);
    hub.announce(key.channel, 'holder-H');
    for (let i = 0; i < 63; i++) hub.announce(key.channel, `holder-${i}`); // H is now the oldest of 64
    const mark = watch.seen;
    hub.announce(key.channel, 'holder-5'); // another grant's repeat
    expect(watch.releasedSince(mark, ['holder-H'])).toBe(false);
    hub.announce(key.channel, 'holder-H');
    expect(watch.releasedSince(mark, ['holder-H'])).toBe(true);
    const later = watch.seen;
    hub.announce(key.channel, 'holder-new'); // a new release: H leaves the window
    expect(watch.releasedSince(later, ['holder-0'])).toBe(false);
    watch.close();
  });

  it('repeats wake neither a multi-key sleeper nor one without refusing grants; the next release wakes both in turn', async () => {
    const { hub } = hubWithLog();
    const [a, b] = [names('a'), names('b')];
    const multi = hub.watch([a, b]);
    const reader = hub.watch([a]);
    hub.announce(a.channel, 'holder-H');
    const woken: string[] = [];
    const sleeps = [
      multi.next(5_000, undefined, false, undefined, ['holder-H']).then(() => woken.push('multi')),
      reader.next(5_000, undefined, false, undefined, undefined).then(() => woken.push('reader')),
    ];
    hub.announce(a.channel, 'holder-H');
    hub.announce(a.channel, 'holder-H');
    await settled();
    expect(woken).toEqual([]);
    // A multi-key waiter may be blocked elsewhere: the wake-up goes on to the single-key one.
    hub.announce(a.channel, 'holder-X');
    await settled();
    expect(woken.sort()).toEqual(['multi', 'reader']);
    await Promise.all(sleeps);
    multi.close();
    reader.close();
  });

  it('a waiter woken by a repeat that leaves without attempting passes the wake-up on', async () => {
    const { hub } = hubWithLog();
    const key = names('k');
    const blocked = hub.watch([key]);
    const other = hub.watch([key]);
    hub.announce(key.channel, 'holder-H');
    let otherWoken = false;
    const otherSleep = other.next(5_000).then(() => {
      otherWoken = true;
    });
    const blockedSleep = blocked.next(5_000, undefined, false, undefined, ['holder-H']);
    hub.announce(key.channel, 'holder-H');
    await blockedSleep;
    expect(otherWoken).toBe(false);
    blocked.close(false);
    await settled();
    expect(otherWoken).toBe(true);
    await otherSleep;
    other.close();
  });
});
