import { setTimeout as sleep } from 'node:timers/promises';
import { eventually } from '../support/eventually';
import { uniqueKey } from '../support/lock-app';
import { storeRows, storesUnderTest } from '../support/store-matrix';
import type {
  AbortedReadMessage,
  ActMessage,
  ElectedMessage,
  LeaderCandidateConfig,
  StoppingMessage,
} from '../reliability/children/leader-candidate';
import { ChildScript } from '../reliability/support/child-process';

const TTL_MS = 1_000;
/** Starting the children (Node processes with Nest, six at once) on a loaded 2-core machine. */
const START_TIMEOUT_MS = 60_000;
const STEP_TIMEOUT_MS = 20_000;
/**
 * Bounds, generous for a loaded machine: a graceful stop is replaced without waiting for the lease (the
 * waiters are woken by the release), a crash or pause within about one ttl. The measured figures are printed.
 */
const GRACEFUL_BOUND_MS = TTL_MS / 2;
const CRASH_BOUND_MS = TTL_MS + 1_500;
/** The thawed leader's first read of its signal, once it runs again. */
const DETECT_BOUND_MS = 3_000;

function wallClock(): number {
  return performance.timeOrigin + performance.now();
}

interface Election extends ElectedMessage {
  readonly child: ChildScript;
}

/** The candidates' messages, gathered in the order each child sent them. */
class Fleet {
  readonly elections: Election[] = [];
  readonly acts: ActMessage[] = [];
  constructor(readonly children: readonly ChildScript[]) {}

  collect(): void {
    for (const child of this.children) {
      this.elections.push(...child.drain<ElectedMessage>('elected').map((message) => ({ ...message, child })));
      this.acts.push(...child.drain<ActMessage>('act'));
    }
    this.elections.sort((one, two) => one.at - two.at);
  }

  /** The election number `index` (0 first), once it happened. */
  async election(index: number): Promise<Election> {
    await eventually(
      async () => {
        this.collect();
        return this.elections.length > index;
      },
      STEP_TIMEOUT_MS,
      `election ${index + 1}`,
    );
    return this.elections[index];
  }
}

/**
 * Separate OS processes on a real Redis and on Redlock over 3 nodes, each an instance with a @Leader job. The
 * leader is frozen (SIGSTOP) past its lease and thawed, the next one stopped gracefully, the next one killed
 * (SIGKILL). Each time another takes over, its term greater, and no leader acts after the next was elected;
 * the thawed one reads its signal aborted before it acts again. The rows run side by side: each waits on
 * processes starting and leases running out, and their waits overlap.
 */
describe.each(storeRows(storesUnderTest(['redis', 'redlock3'])))(
  'leader hand-over across processes (%s)',
  { concurrent: true },
  (name, fixture) => {
    it('a pause and a crash are replaced within about a ttl, a graceful stop at once, never two leaders acting', async () => {
      const store = await fixture.setup();
      const candidates: ChildScript[] = [];
      try {
        const leadership = uniqueKey('single-job');
        for (const id of ['a', 'b', 'c']) {
          const config: LeaderCandidateConfig = {
            lockOptions: store.options({ instance: `candidate-${id}` }),
            name: leadership,
            ttl: TTL_MS,
          };
          candidates.push(ChildScript.start('leader-candidate', { config }));
        }
        await Promise.all(candidates.map((child) => child.next('ready', START_TIMEOUT_MS)));
        const fleet = new Fleet(candidates);
        const first = await fleet.election(0);
        // The others campaign from their bootstrap: refused, they wait for the leader's release or expiry.
        await sleep(500);

        first.child.signal('SIGSTOP');
        const pausedAt = wallClock();
        const second = await fleet.election(1);
        const pauseMs = second.at - pausedAt;
        // Frozen a little longer, as a long pause would be.
        await sleep(300);
        const thawedAt = wallClock();
        first.child.signal('SIGCONT');
        const abortedRead = await first.child.next<AbortedReadMessage>('aborted-read', STEP_TIMEOUT_MS);
        // The thawed one campaigns again, and waits with the third.
        await sleep(500);

        second.child.send({ type: 'stop' });
        const stopping = await second.child.next<StoppingMessage>('stopping', STEP_TIMEOUT_MS);
        const third = await fleet.election(2);
        const gracefulMs = third.at - stopping.at;
        await second.child.next('stopped', STEP_TIMEOUT_MS);

        await sleep(300);
        const killedAt = wallClock();
        await third.child.kill();
        const fourth = await fleet.election(3);
        const crashMs = fourth.at - killedAt;
        await sleep(100);
        fleet.collect();

        console.log(
          `leader hand-over (${name}, ttl ${TTL_MS} ms): pause (SIGSTOP) ${pauseMs.toFixed(1)} ms, graceful stop ` +
            `${gracefulMs.toFixed(1)} ms, crash (SIGKILL) ${crashMs.toFixed(1)} ms; the thawed leader read its ` +
            `signal aborted ${(abortedRead.at - thawedAt).toFixed(1)} ms after SIGCONT; terms ` +
            `${fleet.elections.map((election) => `${election.term} (${election.instance})`).join(', ')}`,
        );
        const elections = [first, second, third, fourth];
        expect(new Set(elections.map((election) => election.child)).size).toBe(3);
        for (let index = 1; index < elections.length; index++) {
          expect(elections[index].term).toBeGreaterThan(elections[index - 1].term);
          // Never two leaders acting: every act of a term came before the next term was granted.
          const acts = fleet.acts.filter((act) => act.term === elections[index - 1].term).map((act) => act.at);
          expect(acts.length).toBeGreaterThan(0);
          expect(Math.max(...acts)).toBeLessThan(elections[index].at);
        }
        expect(fleet.acts.filter((act) => act.term === first.term && act.at >= thawedAt)).toEqual([]);
        expect(abortedRead).toMatchObject({ term: first.term, reason: 'LockLostError' });
        expect(abortedRead.at - thawedAt).toBeLessThan(DETECT_BOUND_MS);
        expect(pauseMs).toBeLessThan(CRASH_BOUND_MS);
        expect(gracefulMs).toBeLessThan(GRACEFUL_BOUND_MS);
        expect(crashMs).toBeLessThan(CRASH_BOUND_MS);
        for (const child of candidates) expect(child.reportedFaults).toEqual([]);
      } finally {
        await Promise.all(candidates.map((child) => child.kill()));
        await store.teardown();
      }
    }, 120_000);
  },
);
