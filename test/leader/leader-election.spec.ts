import { firstValueFrom, filter, take, toArray } from 'rxjs';
import {
  LockHealthIndicator,
  LockLostError,
  type LeaderOptions,
  type LeaderTerm,
  type Leadership,
  type LockEvent,
  type LockService,
} from '../../lib';
import { eventually } from '../support/eventually';
import { type LockApp, trackLockApps, uniqueKey } from '../support/lock-app';
import { recordUnhandledRejections } from '../support/real-process';
import { waiterAsleep } from '../support/waiters';
import { describeEachStore, type StoreName, type StoreUnderTest, storesUnderTest } from '../support/store-matrix';

/** Short leases: a crash or loss is seen within about this long. */
const TTL_MS = 1_000;
/** Generous bound for what should take a round trip or two, on a loaded 2-core machine. */
const SOON_MS = 5_000;

/** A candidate of a leadership whose work runs until its term's signal aborts, or until told to resign. */
interface Candidate {
  readonly leadership: Leadership;
  /** Every term it was given, in order. */
  readonly terms: LeaderTerm[];
  /** Terms whose fn has returned. */
  readonly finished: LeaderTerm[];
  /** Makes the current term's fn return (resigning). */
  resign(): void;
}

/** Candidates running work now, across a test: more than one at a time is two leaders' work overlapping. */
class Bench {
  running = 0;
  overlaps = 0;

  campaign(locks: LockService, name: string, options: LeaderOptions = { ttl: TTL_MS }): Candidate {
    const terms: LeaderTerm[] = [];
    const finished: LeaderTerm[] = [];
    let finish: (() => void) | undefined;
    const leadership = locks.lead(
      name,
      async (term) => {
        terms.push(term);
        if (++this.running > 1) this.overlaps++;
        try {
          await new Promise<void>((resolve) => {
            finish = resolve;
            term.signal.addEventListener('abort', () => resolve(), { once: true });
          });
        } finally {
          this.running--;
          finished.push(term);
        }
      },
      options,
    );
    return { leadership, terms, finished, resign: () => finish?.() };
  }
}

function leads(candidate: Candidate): Promise<void> {
  return eventually(async () => candidate.leadership.isLeader, SOON_MS, 'the candidate leads');
}

describeEachStore(
  'leader election (%s store)',
  (_name: StoreName, fixture) => {
    let store: StoreUnderTest;
    beforeAll(async () => {
      store = await fixture.setup();
    });
    afterAll(() => store?.teardown());
    const apps = trackLockApps();

    /** Two instances: two modules over the store, or one module in-process (its locks are its own). */
    async function twoInstances(): Promise<[LockApp, LockApp]> {
      const first = await apps.start(store.options({ instance: 'first' }));
      if (!store.sharedAcrossModules) return [first, first];
      return [first, await apps.start(store.options({ instance: 'second' }))];
    }

    it('elects a sole candidate: fn runs with the term, leader() and inspect() name it; stop() ends the term and frees the leadership', async () => {
      const { locks } = await apps.start(store.options({ instance: 'solo' }));
      const name = uniqueKey('solo');
      const bench = new Bench();
      const candidate = bench.campaign(locks, name);
      await leads(candidate);
      const [term] = candidate.terms;
      expect(term).toMatchObject({ name, instance: 'solo' });
      expect(term.term).toBeGreaterThan(0);
      expect(term.signal.aborted).toBe(false);
      expect(candidate.leadership.term).toBe(term);
      expect(await locks.leader(name)).toMatchObject({ name, instance: 'solo', term: term.term });
      const info = await locks.inspect(`leader:${name}`);
      expect(info).toMatchObject({
        key: `leader:${name}`,
        kind: 'leader',
        holders: [{ instance: 'solo', fence: term.term }],
      });

      await candidate.leadership.stop();
      expect(term.signal.aborted).toBe(true);
      expect(term.signal.reason).toBeInstanceOf(LockLostError);
      expect(candidate.finished).toEqual([term]);
      expect(candidate.leadership.isLeader).toBe(false);
      expect(candidate.leadership.term).toBeUndefined();
      expect(await locks.leader(name)).toBeNull();
      // Stopped for good: it campaigns no more.
      await new Promise((resolve) => setTimeout(resolve, TTL_MS));
      expect(candidate.terms).toHaveLength(1);
    });

    it('one leader at a time; a leader whose fn returns yields to the candidate waiting, and terms only grow', async () => {
      const [one, two] = await twoInstances();
      const name = uniqueKey('yield');
      const bench = new Bench();
      const a = bench.campaign(one.locks, name);
      await leads(a);
      const b = bench.campaign(two.locks, name);
      // b waits: a's fn keeps running.
      await waiterAsleep(two.locks, `leader:${name}`);
      expect(b.leadership.isLeader).toBe(false);

      a.resign();
      await leads(b);
      expect(a.leadership.isLeader).toBe(false);
      expect(a.terms).toHaveLength(1);
      // a campaigns again after its yield, and waits behind b.
      await waiterAsleep(one.locks, `leader:${name}`);
      b.resign();
      await leads(a);
      expect(b.leadership.isLeader).toBe(false);

      const terms = [a.terms[0].term, b.terms[0].term, a.terms[1].term];
      expect(terms[1]).toBeGreaterThan(terms[0]);
      expect(terms[2]).toBeGreaterThan(terms[1]);
      expect(bench.overlaps).toBe(0);
      await Promise.all([a.leadership.stop(), b.leadership.stop()]);
    });

    it('a graceful stop hands over to the waiting candidate without a ttl wait', async () => {
      const [one, two] = await twoInstances();
      const name = uniqueKey('graceful');
      const bench = new Bench();
      // A long lease: a take-over that waited for it would show.
      const a = bench.campaign(one.locks, name, { ttl: 30_000 });
      await leads(a);
      const b = bench.campaign(two.locks, name, { ttl: 30_000 });
      await waiterAsleep(two.locks, `leader:${name}`);
      const stoppedAt = performance.now();
      await a.leadership.stop();
      await leads(b);
      const handOverMs = performance.now() - stoppedAt;
      expect(handOverMs).toBeLessThan(SOON_MS);
      expect(bench.overlaps).toBe(0);
      await b.leadership.stop();
    });

    it('fn throwing (or returning at once) is never an unhandled rejection: the candidate resigns and campaigns again, each term greater', async () => {
      const { locks } = await apps.start(store.options());
      const rejections = recordUnhandledRejections();
      try {
        const name = uniqueKey('throws');
        const terms: number[] = [];
        const leadership = locks.lead(
          name,
          (term) => {
            terms.push(term.term);
            if (terms.length % 2 === 0) return 'returned at once';
            throw new Error('the leader work failed');
          },
          { ttl: TTL_MS },
        );
        await eventually(async () => terms.length >= 3, SOON_MS, 'three terms');
        await leadership.stop();
        expect(terms[1]).toBeGreaterThan(terms[0]);
        expect(terms[2]).toBeGreaterThan(terms[1]);
        expect(rejections.reasons).toEqual([]);
      } finally {
        rejections.stop();
      }
    });

    it("a lost lease aborts the term's signal with a LockLostError, deposes the leader (lost), and it campaigns again", async () => {
      const { locks } = await apps.start(store.options({ instance: 'lost' }));
      const name = uniqueKey('lost');
      const deposed = firstValueFrom(
        locks.events.pipe(
          filter((event): event is Extract<LockEvent, { type: 'deposed' }> => event.type === 'deposed'),
        ),
      );
      const bench = new Bench();
      const candidate = bench.campaign(locks, name);
      await leads(candidate);
      const [first] = candidate.terms;
      expect(await locks.forceRelease(`leader:${name}`)).toBe(true);
      expect(first.signal.aborted).toBe(true);
      expect(first.signal.reason).toBeInstanceOf(LockLostError);
      expect(await deposed).toMatchObject({ leader: name, term: first.term, reason: 'lost' });
      await eventually(
        async () => candidate.terms.length === 2 && candidate.leadership.isLeader,
        SOON_MS,
        're-elected',
      );
      expect(candidate.terms[1].term).toBeGreaterThan(first.term);
      await candidate.leadership.stop();
    });

    it('events: elected and deposed (resigned, shutdown), each with the term; the health indicator names what it leads', async () => {
      const app = await apps.start(store.options({ instance: 'evented' }));
      const name = uniqueKey('events');
      const events = firstValueFrom(
        app.locks.events.pipe(
          filter((event) => event.type === 'elected' || event.type === 'deposed'),
          take(4),
          toArray(),
        ),
      );
      const bench = new Bench();
      const candidate = bench.campaign(app.locks, name);
      await leads(candidate);
      const health = app.module.get(LockHealthIndicator);
      expect((await health.isHealthy('locks')).locks.leading).toEqual([name]);
      candidate.resign();
      await eventually(
        async () => candidate.terms.length === 2 && candidate.leadership.isLeader,
        SOON_MS,
        're-elected',
      );
      await app.close();
      const [electedFirst, resigned, electedSecond, shutdown] = await events;
      const [first, second] = candidate.terms;
      expect(electedFirst).toMatchObject({
        type: 'elected',
        leader: name,
        term: first.term,
        instance: 'evented',
        keys: [`leader:${name}`],
      });
      expect(resigned).toMatchObject({ type: 'deposed', leader: name, term: first.term, reason: 'resigned' });
      expect(electedSecond).toMatchObject({ type: 'elected', leader: name, term: second.term });
      expect(shutdown).toMatchObject({ type: 'deposed', leader: name, term: second.term, reason: 'shutdown' });
      expect((shutdown as { ledMs: number }).ledMs).toBeGreaterThanOrEqual(0);
      expect(second.signal.aborted).toBe(true);
      expect(candidate.finished).toEqual([first, second]);
    });

    it("a leader thawed after its lease ran out reads its term's signal aborted on the first read, before any timer ran", async () => {
      const { locks } = await apps.start(store.options());
      const name = uniqueKey('thawed');
      const candidate = new Bench().campaign(locks, name, { ttl: 200 });
      await leads(candidate);
      const [term] = candidate.terms;
      // Past the 200 ms lease, and short: the other rows of this file run in the same process meanwhile.
      const until = performance.now() + 300;
      while (performance.now() < until) {
        // The event loop blocked past the lease, as a paused process is.
      }
      expect(term.signal.aborted).toBe(true);
      expect(term.signal.reason).toBeInstanceOf(LockLostError);
      expect(candidate.leadership.isLeader).toBe(false);
      await candidate.leadership.stop();
    });
  },
  storesUnderTest().filter((fixture) => fixture.name !== 'redlock5'),
);
