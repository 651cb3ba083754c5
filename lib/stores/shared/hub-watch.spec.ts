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
    expect(watch.releasedSince(mark, ['holder-H'])).toBe(false);
    hub.announce(key.channel, 'holder-H');
    expect(watch.releasedSince(mark, ['holder-H'])).toBe(true);
    const later = watch.seen;
    hub.announce(key.channel, 'holder-new'); // a new release: H leaves the window
    expect(watch.releasedSince(later, ['holder-0'])).toBe(false);
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

describe(
  'ReleaseWatch.close: a blind sleeper (no lease end ' + 'read) gets the turn from whoever leaves ahead of it',
  () => {
    it(
      'a waiter that got in wakes the blind sleeper behind it, ' +
        'which sleeps again at the head; one that read a lease end is left asleep',
      async () => {
        const { hub } = hubWithLog();
        const key = names('k');
        const head = hub.watch([key]);
        const blind = hub.watch([key]);
        const timed = hub.watch([key]);
        void head.seen; // attempted, then sleeps on a lease end
        void timed.seen;
        const headSleep = head.next(5_000);
        let blindWoken = false;
        const blindSleep = blind.next(5_000).then(() => (blindWoken = true));
        let timedWoken = false;
        void timed.next(5_000).then(() => (timedWoken = true));
        hub.announce(key.channel, 'holder-A');
        await headSleep;
        expect(blindWoken).toBe(false);
        void head.seen; // its attempt
        // Got in, no room left: still passes the turn, to the blind sleeper, not past it.
        head.close({ alone: false });
        await blindSleep;
        expect(timedWoken).toBe(false);
        // Its attempt refused, it sleeps again ahead of the sleeper that was behind it.
        void blind.seen;
        let again = false;
        void blind.next(5_000).then(() => (again = true));
        hub.announce(key.channel, 'holder-B');
        await Promise.resolve();
        await Promise.resolve();
        expect([again, timedWoken]).toEqual([true, false]);
        // Its attempt got in: with a sleeper behind it that read its own lease end, it wakes nobody.
        void blind.seen;
        blind.close({ alone: false });
        await Promise.resolve();
        expect(timedWoken).toBe(false);
        hub.clear();
        timed.close();
      },
    );
  },
);

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
