import type { LockModuleOptions } from '../../lib';
import { uniqueKey } from '../support/lock-app';
import { callEvent, enterEvent, eventsKey, exitEvent, insideKeys } from './children/primitives-history-events';
import type { PrimitivesHistoryConfig, PrimitivesHistoryReport } from './children/primitives-history-worker';
import { historyServers, workerFleet } from './support/history-fleet';
import { checkPrimitivesHistory, type PrimitivesVerdict } from './support/primitives-history';

const PROCESSES = 3;
const LIMIT = 3;
/** Per process: 4 semaphore workers (12 in all for 3 permits), 1 writer and 3 readers on the read-write key. */
const SEMAPHORE_WORKERS = 4;
const WRITERS = 1;
const READERS = 3;
const DURATION_MS = 1_500;
/** 12 semaphore workers × 5: more than the 50 grants a locked run must show, however slow the machine. */
const MIN_CYCLES_PER_WORKER = 5;
const MAX_CYCLES_PER_WORKER = 150;
/** Each step of a run (set-up, the run itself) ends within this. */
const STEP_TIMEOUT_MS = 20_000;

interface RunOutcome {
  readonly semaphore: PrimitivesVerdict;
  readonly readWrite: PrimitivesVerdict;
  /** What the INCR/DECR counters of the data Redis saw: the most permits, readers and writers inside at once. */
  readonly counted: { readonly permits: number; readonly readers: number; readonly writers: number };
  readonly reports: readonly PrimitivesHistoryReport[];
}

/**
 * The history checker for `limit` and `mode`: 3 OS processes, each its own Nest application
 * context with LockModule, hammer at the same time a semaphore key (limit 3, 4 workers each: 12 for 3
 * permits) and a read-write key (1 writer and 3 readers each). Every critical section leaves `call` / `enter`
 * (with its fence) / `exit` events in a list on a separate data Redis, whose order is the order Redis ran
 * them: no clocks are compared. The checker replays the lists: never more than 3 permits inside, never a
 * writer beside anyone, and every grant's fence above every fence granted before it was asked for. The
 * control runs (no lock; the in-process store in each process) must be caught.
 */
describe('history checker: semaphore and read-write lock across processes', () => {
  const fleet = historyServers();
  const workers = workerFleet('primitives-history-worker', PROCESSES);
  const { servers } = fleet;

  async function runHistory(label: string, lockOptions: LockModuleOptions, locked: boolean): Promise<RunOutcome> {
    const semaphoreKey = uniqueKey('history-semaphore');
    const readWriteKey = uniqueKey('history-rw');
    const configs = Array.from(
      { length: PROCESSES },
      (_, processIndex) =>
        ({
          // ttl 4 s: a worker descheduled for a second or two inside its critical section keeps its lease. (At
          // 4 s a Redlock run took ~4 s instead of ~1.5 s while writers' leftovers made readers sleep until
          // they expired: see TokenOrder (redlock/token-order.ts); at 2 s that hid in the noise.)
          lockOptions: { ttl: 4_000, wait: 10_000, ...lockOptions },
          dataUrl: fleet.data.url,
          semaphore: { key: semaphoreKey, limit: LIMIT, workers: SEMAPHORE_WORKERS },
          readWrite: { key: readWriteKey, writers: WRITERS, readers: READERS },
          processIndex,
          durationMs: DURATION_MS,
          minCyclesPerWorker: MIN_CYCLES_PER_WORKER,
          maxCyclesPerWorker: MAX_CYCLES_PER_WORKER,
          locked,
        }) satisfies PrimitivesHistoryConfig,
    );
    // All processes are set up before any starts: the cycles of the three really run at the same time.
    const reports = await workers.runAll<PrimitivesHistoryReport>(configs, STEP_TIMEOUT_MS);

    for (const report of reports) expect(report.errors).toEqual([]);
    const semaphore = checkPrimitivesHistory(await fleet.dataClient.lrange(eventsKey(semaphoreKey), 0, -1), {
      limit: LIMIT,
    });
    const readWrite = checkPrimitivesHistory(
      await fleet.dataClient.lrange(eventsKey(readWriteKey), 0, -1),
      'read-write',
    );
    const highest = async (key: string, kind: 'permit' | 'read' | 'write'): Promise<number> =>
      Number((await fleet.dataClient.get(insideKeys(key, kind).max)) ?? 0);
    const counted = {
      permits: await highest(semaphoreKey, 'permit'),
      readers: await highest(readWriteKey, 'read'),
      writers: await highest(readWriteKey, 'write'),
    };
    const sum = (pick: (report: PrimitivesHistoryReport) => number): number =>
      reports.reduce((total, report) => total + pick(report), 0);
    console.log(
      `primitives history [${label}]: ${PROCESSES} processes; semaphore limit ${LIMIT}: ${semaphore.grants} grants ` +
        `${JSON.stringify(semaphore.grantsByProcess)}, max inside ${semaphore.maxInside} (counter ${counted.permits}), ` +
        `${semaphore.crossProcessOverlaps} grants beside another process's holder, over limit ${semaphore.overLimit}, ` +
        `fence inversions ${semaphore.fenceInversions}, repeated fences ${semaphore.repeatedFences}; read-write: ${readWrite.grants} grants ` +
        `(${sum((report) => report.completed.read)} reads, ${sum((report) => report.completed.write)} writes) ` +
        `${JSON.stringify(readWrite.grantsByProcess)}, max readers ${readWrite.maxReaders} (counter ${counted.readers}), ` +
        `max writers ${readWrite.maxWriters} (counter ${counted.writers}), writer overlaps ${readWrite.writerOverlaps}, ` +
        `fence inversions ${readWrite.fenceInversions}, repeated fences ${readWrite.repeatedFences}; busy ${sum((report) => report.busy)}, ` +
        `locks lost inside a critical section ${sum((report) => report.lostInside)}` +
        [...semaphore.examples, ...readWrite.examples].map((example) => `\n  ${example}`).join(''),
    );
    // The counters and the lists are written by the same scripts: they must tell the same story.
    expect(counted).toEqual({
      permits: semaphore.maxInside,
      readers: readWrite.maxReaders,
      writers: readWrite.maxWriters,
    });
    if (locked) expect(sum((report) => report.lostInside)).toBe(0);
    return { semaphore, readWrite, counted, reports };
  }

  /**
   * What a locked run must show: no violation (a repeated fence is one: every grant has its own, permits and
   * readers granted at the same moment by different Redlock quorums included), and enough contention across
   * processes to prove something.
   */
  function expectKeptAndContended({ semaphore, readWrite, reports }: RunOutcome): void {
    for (const { violations, examples } of [semaphore, readWrite]) {
      expect(violations === 0 ? [] : examples).toEqual([]);
      expect(violations).toBe(0);
    }
    // Limit 3 reached (12 workers want in), never passed; permits were held by several processes at once.
    expect(semaphore.maxInside).toBeLessThanOrEqual(LIMIT);
    expect(semaphore.maxInside).toBeGreaterThan(1);
    expect(semaphore.crossProcessOverlaps).toBeGreaterThan(0);
    expect(Object.keys(semaphore.grantsByProcess)).toHaveLength(PROCESSES);
    expect(semaphore.grants).toBeGreaterThan(50);
    // Readers were inside together, writers alone; every process both read and wrote.
    expect(readWrite.maxReaders).toBeGreaterThan(1);
    expect(readWrite.maxWriters).toBe(1);
    expect(Object.keys(readWrite.grantsByProcess)).toHaveLength(PROCESSES);
    for (const report of reports) {
      expect(report.completed.write).toBeGreaterThan(0);
      expect(report.completed.read).toBeGreaterThan(0);
    }
  }

  const redlockNodes = (count: number): LockModuleOptions => ({
    nodes: servers.slice(0, count).map((server) => server.url),
  });

  it('one Redis: never more than 3 permits inside, no reader beside a writer, fences rise in grant order', async () => {
    expectKeptAndContended(await runHistory('one Redis', { redis: servers[0].url }, true));
  });

  it('Redlock over 5 nodes: never more than 3 permits inside, no reader beside a writer, fences rise in grant order', async () => {
    expectKeptAndContended(await runHistory('Redlock, 5 nodes', redlockNodes(5), true));
  });

  it('Redlock over 3 nodes: never more than 3 permits inside, no reader beside a writer, fences rise in grant order', async () => {
    expectKeptAndContended(await runHistory('Redlock, 3 nodes', redlockNodes(3), true));
  });

  it('control: the same cycles without the lock go over the limit and mix readers with writers, and the checker sees it', async () => {
    const { semaphore, readWrite } = await runHistory('control, no lock', { redis: servers[0].url }, false);
    expect(semaphore.overLimit).toBeGreaterThan(0);
    expect(semaphore.maxInside).toBeGreaterThan(LIMIT);
    expect(readWrite.writerOverlaps).toBeGreaterThan(0);
    expect(semaphore.fenceInversions).toBeGreaterThan(0);
  });

  it('control: the in-process store in each process (right in one process, not across three) is caught too', async () => {
    const { semaphore, readWrite } = await runHistory('control, in-process store per process', {}, true);
    expect(semaphore.overLimit).toBeGreaterThan(0);
    expect(semaphore.maxInside).toBeGreaterThan(LIMIT);
    expect(readWrite.writerOverlaps).toBeGreaterThan(0);
    // Not the fences: each process's are at least its wall clock in µs, so grants made one after another in
    // different processes mostly rise anyway (what lets a resource fenced by one run accept the next run's).
  });
});

describe('checkPrimitivesHistory', () => {
  const enter = (attempt: string, kind: 'permit' | 'read' | 'write', fence: number): string[] => [
    callEvent(attempt),
    enterEvent(attempt, kind, fence),
  ];

  it('accepts permits up to the limit, and counts those of different processes inside together', () => {
    const verdict = checkPrimitivesHistory(
      [
        ...enter('0.a.0', 'permit', 1),
        ...enter('1.a.0', 'permit', 2),
        exitEvent('0.a.0', 'permit'),
        ...enter('0.a.1', 'permit', 3),
        exitEvent('1.a.0', 'permit'),
        exitEvent('0.a.1', 'permit'),
      ],
      { limit: 2 },
    );
    expect(verdict).toMatchObject({
      grants: 3,
      maxInside: 2,
      crossProcessOverlaps: 2,
      violations: 0,
      grantsByProcess: { '0': 2, '1': 1 },
    });
  });

  it('counts a permit over the limit', () => {
    const verdict = checkPrimitivesHistory(
      [...enter('0.a.0', 'permit', 1), ...enter('0.b.0', 'permit', 2), ...enter('1.a.0', 'permit', 3)],
      { limit: 2 },
    );
    expect(verdict.overLimit).toBe(1);
    expect(verdict.maxInside).toBe(3);
  });

  it('accepts readers together and a writer alone', () => {
    const verdict = checkPrimitivesHistory(
      [
        ...enter('0.r.0', 'read', 1),
        ...enter('1.r.0', 'read', 2),
        exitEvent('0.r.0', 'read'),
        exitEvent('1.r.0', 'read'),
        ...enter('2.w.0', 'write', 3),
        exitEvent('2.w.0', 'write'),
      ],
      'read-write',
    );
    expect(verdict).toMatchObject({ maxReaders: 2, maxWriters: 1, writerOverlaps: 0, violations: 0 });
  });

  it('counts a reader beside a writer, a writer beside a reader, and two writers', () => {
    const readerBesideWriter = [...enter('0.w.0', 'write', 1), ...enter('1.r.0', 'read', 2)];
    const writerBesideReader = [...enter('0.r.0', 'read', 1), ...enter('1.w.0', 'write', 2)];
    const twoWriters = [...enter('0.w.0', 'write', 1), ...enter('1.w.0', 'write', 2)];
    for (const entries of [readerBesideWriter, writerBesideReader, twoWriters]) {
      expect(checkPrimitivesHistory(entries, 'read-write').writerOverlaps).toBe(1);
    }
  });

  it('counts a fence not above one granted before the call, and a repeated fence; a grant that overtook is fine', () => {
    // 0.b asked before 0.a was granted: its lower fence is no inversion (grants may finish out of order).
    const overtaken = [
      callEvent('0.a.0'),
      callEvent('0.b.0'),
      enterEvent('0.a.0', 'permit', 5),
      enterEvent('0.b.0', 'permit', 4),
    ];
    expect(checkPrimitivesHistory(overtaken, { limit: 2 }).fenceInversions).toBe(0);
    // 1.a asked after the fence 5 was granted: its fence must be above 5.
    expect(
      checkPrimitivesHistory([...enter('0.a.0', 'permit', 5), ...enter('1.a.0', 'permit', 4)], { limit: 2 })
        .fenceInversions,
    ).toBe(1);
    const repeated = checkPrimitivesHistory(
      [
        callEvent('0.a.0'),
        callEvent('1.a.0'),
        enterEvent('0.a.0', 'permit', 5),
        enterEvent('1.a.0', 'permit', 5),
        exitEvent('0.a.0', 'permit'),
        exitEvent('1.a.0', 'permit'),
      ],
      { limit: 2 },
    );
    expect(repeated).toMatchObject({ fenceInversions: 0, repeatedFences: 1, violations: 1 });
  });

  it('counts an enter without its call, an exit without its enter, and a holder that never left', () => {
    expect(
      checkPrimitivesHistory([enterEvent('0.a.0', 'permit', 1), exitEvent('0.a.0', 'permit')], { limit: 1 }).malformed,
    ).toBe(1);
    expect(checkPrimitivesHistory([exitEvent('0.a.0', 'permit')], { limit: 1 }).malformed).toBe(1);
    expect(checkPrimitivesHistory(enter('0.a.0', 'permit', 1), { limit: 1 }).malformed).toBe(1);
  });
});
