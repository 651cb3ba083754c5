// Spec: a waiter's watch attempts again only for a release that can free it, and wakes on a lagging node's repeat.
import type { LockKeyNames } from '../lock-store.interface';
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

describe('ReleaseWatch.releasedSince: whether a refused waiter attempts again at once', () => {
  it('only for a release of a grant that refused it, one without a token, or one the window forgot', () => {
    const { hub } = hubWithLog();
    const key = names('k');
    const watch = hub.watch([key]);
    const mark = watch.seen;
    expect(watch.releasedSince(mark, { refusedBy: ['holder-B'] })).toBe(false);
    // An earlier grant's release, counted while the attempt was refused by holder B: it freed nothing for it.
    hub.announce(key.channel, 'holder-A');
    hub.announce(key.channel, 'holder-A');
    expect(watch.releasedSince(mark, { refusedBy: ['holder-B'] })).toBe(false);
    // Without the holders that refused it (another store, a permit): any release that woke nobody.
    expect(watch.releasedSince(mark, {})).toBe(true);
    // The refusing grant's own release.
    hub.announce(key.channel, 'holder-B');
    expect(watch.releasedSince(mark, { refusedBy: ['holder-B'] })).toBe(true);
    // Releases before the mark do not count; reading releasedSince marks nothing (seen still moves on).
    const later = watch.seen;
    expect(later).toBe(mark + 2);
    expect(watch.releasedSince(later, { refusedBy: ['holder-B'] })).toBe(false);
    // A release announced without a token may have been anyone's.
    hub.announce(key.channel);
    expect(watch.releasedSince(later, { refusedBy: ['holder-B'] })).toBe(true);
    watch.close();
  });

  it('more releases than the window remembers may include the refusing grant', () => {
    const { hub } = hubWithLog();
    const key = names('k');
    const watch = hub.watch([key]);
    const mark = watch.seen;
    for (let i = 0; i < 70; i++) hub.announce(key.channel, `holder-${i}`);
    expect(watch.releasedSince(mark, { refusedBy: ['holder-gone'] })).toBe(true);
    const recent = watch.seen;
    hub.announce(key.channel, 'holder-x');
    expect(watch.releasedSince(recent, { refusedBy: ['holder-gone'] })).toBe(false);
    watch.close();
  });
});

describe('ReleaseWatch.releasedSince without refusing grants named: each release goes to one waiter', () => {
  it('a release that woke a sleeper is not attempted for again by a waiter refused meanwhile', async () => {
    const { hub } = hubWithLog();
    const key = names('k');
    const refused = hub.watch([key]);
    const sleeping = hub.watch([key]);
    void sleeping.seen;
    let woken = false;
    void sleeping.next(10_000).then(() => (woken = true));
    const mark = refused.seen; // its attempt in flight
    hub.announce(key.channel, 'holder-A'); // wakes the sleeper: that waiter's to attempt for
    await Promise.resolve();
    expect(woken).toBe(true);
    expect(refused.releasedSince(mark, {})).toBe(false);
    refused.close({ acquired: false });
    sleeping.close();
  });

  it('a release that woke nobody sends one of the waiters refused meanwhile to attempt again, one only', () => {
    const { hub } = hubWithLog();
    const key = names('k');
    const first = hub.watch([key]);
    const second = hub.watch([key]);
    const firstMark = first.seen;
    const secondMark = second.seen;
    hub.announce(key.channel, 'holder-A'); // nobody asleep: both attempts were in flight
    expect(first.releasedSince(firstMark, {})).toBe(true);
    expect(second.releasedSince(secondMark, {})).toBe(false);
    // A release before a waiter's attempt is not one it was refused in spite of.
    hub.announce(key.channel, 'holder-B');
    expect(first.releasedSince(first.seen, {})).toBe(false);
    first.close({ acquired: false });
    second.close({ acquired: false });
  });
});

describe('ReleaseWatch.releasedSince: wake-ups that reach nobody, and a queued writer', () => {
  it('a wake-up passed on to nobody (a waiter in with room left) sends a refused waiter back', async () => {
    const { hub } = hubWithLog();
    const key = names('k');
    const woken = hub.watch([key]);
    const refused = hub.watch([key]);
    void woken.seen;
    const sleep = woken.next(10_000);
    hub.announce(key.channel, 'holder-A'); // wakes it
    await sleep;
    const mark = refused.seen; // its attempt in flight, refused
    void woken.seen;
    hub.announce(key.channel, 'holder-B'); // nobody asleep: left unclaimed
    woken.close({ roomLeft: true }); // got in with room left: its turn goes on, to nobody asleep
    expect(refused.releasedSince(mark, {})).toBe(true);
    expect(refused.releasedSince(mark, {})).toBe(true); // the wake-up passed on
    expect(refused.releasedSince(mark, {})).toBe(false);
    refused.close({ acquired: false });
  });

  it('a queued writer attempts again for any release counted meanwhile, even one that woke a sleeper', async () => {
    const { hub } = hubWithLog();
    const key = names('k');
    const writer = hub.watch([key]);
    const reader = hub.watch([key]);
    void reader.seen;
    let readerWoken = false;
    void reader.next(10_000).then(() => (readerWoken = true));
    const mark = writer.seen; // its attempt in flight
    hub.announce(key.channel, 'reader-A'); // the last reader's release wakes the sleeping reader, refused by the mark
    await Promise.resolve();
    expect(readerWoken).toBe(true);
    expect(writer.releasedSince(mark, { queued: true })).toBe(true);
    expect(writer.releasedSince(mark, {})).toBe(false);
    reader.close({ acquired: false });
    writer.close({ acquired: false });
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
    expect(watch.releasedSince(mark, { refusedBy: ['holder-H'] })).toBe(false);
    // Another node's announcement of another, earlier release is no reason.
    hub.announce(key.channel, 'holder-A');
    const mark2 = watch.seen;
    hub.announce(key.channel, 'holder-A');
    expect(watch.releasedSince(mark2, { refusedBy: ['holder-H'] })).toBe(false);
    // A lagging node applies H's release while the attempt it refused is answered: a repeat, not counted.
    hub.announce(key.channel, 'holder-H');
    expect(watch.releasedSince(mark2, { refusedBy: ['holder-H'] })).toBe(true);
    // Heard before the next mark (which a repeat does not move): no reason any more.
    const mark3 = watch.seen;
    expect(mark3).toBe(mark2);
    expect(watch.releasedSince(mark3, { refusedBy: ['holder-H'] })).toBe(false);
    watch.close();
  });

  it(
    'next(refusedBy): a later node announcing that release wakes the sleeper; ' +
      "the repeats of a live holder's release wake nobody more",
    async () => {
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
    },
  );

  it('the window keeps each token with its own stamps as older ones leave it', () => {
    const { hub } = hubWithLog();
    const key = names('k');
    const watch = hub.watch([key]);
    hub.announce(key.channel, 'holder-H');
    for (let i = 0; i < 63; i++) hub.announce(key.channel, `holder-${i}`); // H is now the oldest of 64
    const mark = watch.seen;
    hub.announce(key.channel, 'holder-5'); // another grant's repeat
    expect(watch.releasedSince(mark, { refusedBy: ['holder-H'] })).toBe(false);
    hub.announce(key.channel, 'holder-H');
    expect(watch.releasedSince(mark, { refusedBy: ['holder-H'] })).toBe(true);
    const later = watch.seen;
    hub.announce(key.channel, 'holder-new'); // a new release: H leaves the window
    expect(watch.releasedSince(later, { refusedBy: ['holder-0'] })).toBe(false);
    watch.close();
  });

  it(
    'repeats wake neither a multi-key sleeper nor one without ' +
      'refusing grants; the next release wakes both in turn',
    async () => {
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
    },
  );

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
    blocked.close({ acquired: false });
    await settled();
    expect(otherWoken).toBe(true);
    await otherSleep;
    other.close();
  });
});

describe('ReleaseWatch.close: a blind sleeper takes over the lease end of whoever gets in ahead', () => {
  it(
    'a waiter that got in a permit hands its lease end to the blind sleeper behind it, which wakes then, ' +
      'not at once, and sleeps again at the head; one that read a lease end of its own is left as it was',
    async () => {
      const { hub } = hubWithLog();
      const key = names('k');
      const head = hub.watch([key]);
      const blind = hub.watch([key]);
      const timed = hub.watch([key]);
      void head.seen; // attempted, then sleeps until a lease end 1.5 s away
      void timed.seen;
      const headSleep = head.next(1_500);
      let blindWokenAt: number | undefined;
      const blindSleep = blind.next(10_000).then(() => (blindWokenAt = performance.now()));
      let timedWoken = false;
      void timed.next(10_000).then(() => (timedWoken = true));
      const leaseEndAt = performance.now() + 1_500;
      hub.announce(key.channel, 'holder-A');
      await headSleep;
      void head.seen; // its attempt
      // Got in a permit: the blind sleeper is not woken to read a lease end, it is handed the head's.
      head.close({ alone: false });
      await new Promise((resolve) => setTimeout(resolve, 20));
      expect(blindWokenAt).toBeUndefined();
      await blindSleep;
      expect(blindWokenAt).toBeGreaterThanOrEqual(leaseEndAt - 5);
      expect(timedWoken).toBe(false);
      // Its attempt refused, it sleeps again ahead of the sleeper that was behind it.
      void blind.seen;
      let again = false;
      void blind.next(10_000).then(() => (again = true));
      hub.announce(key.channel, 'holder-B');
      await Promise.resolve();
      await Promise.resolve();
      expect([again, timedWoken]).toEqual([true, false]);
      // Its attempt got in: the sleeper behind it read its own lease end, and is left asleep.
      void blind.seen;
      blind.close({ alone: false });
      await Promise.resolve();
      expect(timedWoken).toBe(false);
      hub.clear();
      timed.close();
    },
  );

  it('a blind waiter that got in a permit without watching a lease end wakes the blind sleeper behind it', async () => {
    const { hub } = hubWithLog();
    const key = names('k');
    const first = hub.watch([key]);
    const second = hub.watch([key]);
    let secondWoken = false;
    const firstSleep = first.next(10_000);
    const secondSleep = second.next(10_000).then(() => (secondWoken = true));
    hub.announce(key.channel, 'holder-A');
    await firstSleep;
    void first.seen;
    // It has nothing to hand over, and the sleeper that watched a lease end for both may have left (cancelled).
    first.close({ alone: false });
    await secondSleep;
    expect(secondWoken).toBe(true);
    second.close();
  });
});

describe('ReleaseWatch.close: a grant that holds the key alone leaves a blind sleeper to its release', () => {
  it(
    'a mutex grant wakes nobody behind it; its release, ' + 'handed over in this process, wakes the blind sleeper',
    async () => {
      const { hub } = hubWithLog();
      const key = names('k');
      const head = hub.watch([key]);
      const blind = hub.watch([key]);
      void head.seen;
      const headSleep = head.next(5_000);
      let blindWoken = false;
      const blindSleep = blind.next(5_000).then(() => (blindWoken = true));
      hub.announce(key.channel, 'holder-A');
      await headSleep;
      void head.seen;
      // Got in, alone: its own release will come through this hub, so the blind sleeper need not look now (an
      // attempt that could only be refused).
      head.close();
      await Promise.resolve();
      await Promise.resolve();
      expect(blindWoken).toBe(false);
      hub.handOver(key.channel, 'head-token');
      await blindSleep;
      expect(blindWoken).toBe(true);
      blind.close();
    },
  );
});
