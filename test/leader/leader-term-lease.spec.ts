import { Logger } from '@nestjs/common';
import { InvalidLockKeyError, Locked, type LeaderTerm, LockOptionsError } from '../../lib';
import { eventually } from '../support/eventually';
import { trackLockApps, uniqueKey } from '../support/lock-app';

/** Generous bound for what should take a round trip or two, on a loaded 2-core machine. */
const SOON_MS = 5_000;

/** Resolves when `signal` aborts. */
function aborted(signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => signal.addEventListener('abort', () => resolve(), { once: true }));
}

describe("leader election: a term's lease ends with the term", () => {
  const apps = trackLockApps();

  it('stop() awaited inside its own fn resolves once the term ended, and the lease is released when fn returns', async () => {
    const app = await apps.start({});
    const name = uniqueKey('self-stop');
    const steps: string[] = [];
    let signalAborted: boolean | undefined;
    const leadership = app.locks.lead(name, async (term) => {
      steps.push('elected');
      await leadership.stop();
      signalAborted = term.signal.aborted;
      steps.push('stop resolved');
    });
    await eventually(async () => steps.includes('stop resolved'), SOON_MS, 'stop() resolves inside fn');
    expect(signalAborted).toBe(true);
    expect(leadership.isLeader).toBe(false);
    await eventually(async () => (await app.locks.leader(name)) === null, SOON_MS, 'the lease is released');
    // stop() from outside, after the campaign ended, resolves too; it campaigns no more.
    await leadership.stop();
    expect(steps).toEqual(['elected', 'stop resolved']);
    expect(app.locks.leading()).toEqual([]);
  });

  it.each([
    ['the election line', 'Elected leader'],
    ['the resignation line', 'No longer leader'],
  ])('a logger that throws on %s ends the term with its lease: another candidate leads', async (_line, prefix) => {
    const app = await apps.start({ ttl: 1_000 });
    const name = uniqueKey('throwing-logger');
    const thrown: string[] = [];
    const log = vi.spyOn(Logger.prototype, 'log').mockImplementation((message: unknown) => {
      if (thrown.length === 0 && typeof message === 'string' && message.startsWith(prefix)) {
        thrown.push(message);
        throw new Error('log sink down');
      }
    });
    const errors = vi.spyOn(Logger.prototype, 'error').mockImplementation(() => undefined);
    try {
      let firstRuns = 0;
      // Resigns at once (returns): the resignation line is logged while the lease is still held.
      const first = app.locks.lead(name, () => void firstRuns++);
      await eventually(async () => thrown.length === 1, SOON_MS, 'the logger throws');
      const second: LeaderTerm[] = [];
      const other = app.locks.lead(name, async (term) => {
        second.push(term);
        await aborted(term.signal);
      });
      await eventually(async () => second.length === 1, SOON_MS, 'the other candidate is elected');
      expect(first.isLeader).toBe(false);
      expect(await app.locks.leader(name)).toMatchObject({ term: second[0].term });
      await other.stop();
      await first.stop();
      expect(firstRuns).toBeLessThanOrEqual(1);
      // A failure outside fn stops that campaign, told once as an error.
      const logged = errors.mock.calls.map(([message]) => String(message));
      expect(logged).toContain(`The campaign for leadership "${name}" stopped: log sink down`);
    } finally {
      errors.mockRestore();
      log.mockRestore();
    }
  });

  it("a plain lock cannot take a key of the leaderships' namespace; inspect shows the leadership there", async () => {
    const app = await apps.start({});
    const name = uniqueKey('reserved');
    const key = `leader:${name}`;
    await expect(app.locks.acquire(key, { wait: 0 })).rejects.toBeInstanceOf(InvalidLockKeyError);
    await expect(app.locks.tryAcquire(['free', key])).rejects.toBeInstanceOf(InvalidLockKeyError);
    await expect(app.locks.withLock(key, () => 'ran')).rejects.toBeInstanceOf(InvalidLockKeyError);
    const terms: LeaderTerm[] = [];
    const leadership = app.locks.lead(name, async (term) => {
      terms.push(term);
      await aborted(term.signal);
    });
    await eventually(async () => terms.length === 1, SOON_MS, 'the leadership is elected');
    expect(await app.locks.inspect(key)).toMatchObject({ key, kind: 'leader', holders: [{ fence: terms[0].term }] });
    expect(await app.locks.isLocked(key)).toBe(true);
    await leadership.stop();
    expect(await app.locks.inspect(key)).toBeNull();
  });

  it("@Locked with a key in the leaderships' namespace fails as the class loads", () => {
    let error: unknown;
    try {
      class Jobs {
        @Locked('leader:{0}')
        run(_id: string): void {}
      }
      void Jobs;
    } catch (caught) {
      error = caught;
    }
    expect(error).toBeInstanceOf(LockOptionsError);
    expect((error as LockOptionsError).message).toContain('belong to leaderships');
  });
});
