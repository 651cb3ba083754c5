import type { LockModuleOptions } from '../../lib';
import { uniqueKey } from '../support/lock-app';
import type { HistoryReport, HistoryWorkerConfig } from './children/history-worker';
import { checkHistory, type HistoryVerdict } from './support/history';
import { historyServers, workerFleet } from './support/history-fleet';

const PROCESSES = 3;
const WORKERS_PER_PROCESS = 4;
const DURATION_MS = 2_000;
/** 3 × 20: more than the 50 cycles a locked run must show, however slow the machine. */
const MIN_CYCLES_PER_PROCESS = 20;
const MAX_CYCLES_PER_PROCESS = 400;
/** Children start (Nest bootstrap) and finish (report, close) within this. */
const STEP_TIMEOUT_MS = 20_000;

/**
 * The history checker: 3 OS processes, each its own Nest application context with LockModule, × 4 workers
 * doing locked cycles on ONE key, each critical section a non-atomic GET/SET of a counter plus an RPUSH of
 * the lock's fence. Afterwards the counter must equal the completed cycles and the fences must strictly
 * increase. The control run does the same cycles without the lock and must be caught by the checker.
 */
describe('history checker: mutual exclusion across processes', () => {
  const fleet = historyServers();
  // Started once for the file: a Node process loading Nest costs seconds on a loaded machine.
  const workers = workerFleet('history-worker', PROCESSES);
  const { servers } = fleet;

  /** Runs the processes to the end and checks the history they left. */
  async function runHistory(label: string, lockOptions: LockModuleOptions, locked: boolean): Promise<HistoryVerdict> {
    const lockKey = uniqueKey('history');
    const counterKey = `${lockKey}:counter`;
    const historyKey = `${lockKey}:fences`;
    const configs = Array.from(
      { length: PROCESSES },
      (_, processIndex) =>
        ({
          // ttl 4 s (2 s before): a worker descheduled for a second or two inside its critical section keeps
          // its lease, so a lost lock or an overlap here is the library's, not the loaded machine's.
          lockOptions: { ttl: 4_000, wait: 5_000, ...lockOptions },
          dataUrl: fleet.data.url,
          lockKey,
          counterKey,
          historyKey,
          processIndex,
          workers: WORKERS_PER_PROCESS,
          durationMs: DURATION_MS,
          minCycles: MIN_CYCLES_PER_PROCESS,
          maxCycles: MAX_CYCLES_PER_PROCESS,
          locked,
        }) satisfies HistoryWorkerConfig,
    );
    // All processes are up before any starts: the cycles of the three really run at the same time.
    const reports = await workers.runAll<HistoryReport>(configs, STEP_TIMEOUT_MS);

    for (const report of reports) expect(report.errors).toEqual([]);
    const cycles = reports.reduce((sum, report) => sum + report.completed, 0);
    const counter = Number((await fleet.dataClient.get(counterKey)) ?? 0);
    const verdict = checkHistory(cycles, counter, await fleet.dataClient.lrange(historyKey, 0, -1));
    const busy = reports.reduce((sum, report) => sum + report.busy, 0);
    const lostInside = reports.reduce((sum, report) => sum + report.lostInside, 0);
    console.log(
      `history [${label}]: ${PROCESSES} processes × ${WORKERS_PER_PROCESS} workers, ${verdict.cycles} cycles ` +
        `(${JSON.stringify(verdict.cyclesByProcess)} by process, ${verdict.handoffsBetweenProcesses} handoffs between processes), ` +
        `counter ${verdict.counter}, lost updates ${verdict.lostUpdates}, fence inversions ${verdict.fenceInversions}, ` +
        `violations ${verdict.violations}, busy ${busy}, locks lost inside a critical section ${lostInside}`,
    );
    if (locked) expect(lostInside).toBe(0);
    return verdict;
  }

  it('one Redis: the counter is exact and the fences strictly increase', async () => {
    const verdict = await runHistory('one Redis', { redis: servers[0].url }, true);
    expect(verdict.violations).toBe(0);
    expect(verdict.lostUpdates).toBe(0);
    expect(verdict.fenceInversions).toBe(0);
    // The run proves something only if the processes competed: every one completed cycles, in turns.
    expect(Object.keys(verdict.cyclesByProcess)).toHaveLength(PROCESSES);
    expect(verdict.handoffsBetweenProcesses).toBeGreaterThan(PROCESSES);
    expect(verdict.cycles).toBeGreaterThan(50);
  });

  it('Redlock over 5 nodes: the counter is exact and the fences strictly increase', async () => {
    const verdict = await runHistory('Redlock, 5 nodes', { nodes: servers.map((server) => server.url) }, true);
    expect(verdict.violations).toBe(0);
    expect(verdict.lostUpdates).toBe(0);
    expect(verdict.fenceInversions).toBe(0);
    expect(Object.keys(verdict.cyclesByProcess)).toHaveLength(PROCESSES);
    expect(verdict.handoffsBetweenProcesses).toBeGreaterThan(PROCESSES);
    expect(verdict.cycles).toBeGreaterThan(50);
  });

  it('control: the same cycles without the lock lose updates, and the checker sees it', async () => {
    const verdict = await runHistory('control, no lock', { redis: servers[0].url }, false);
    expect(verdict.lostUpdates).toBeGreaterThan(0);
    expect(verdict.violations).toBeGreaterThan(0);
  });
});

describe('checkHistory', () => {
  it('accepts an exact counter with strictly increasing fences', () => {
    expect(checkHistory(3, 3, ['1:0:0', '2:1:0', '5:0:1'])).toMatchObject({
      violations: 0,
      handoffsBetweenProcesses: 2,
      cyclesByProcess: { '0': 2, '1': 1 },
    });
  });

  it('counts a lost update, a repeated fence and a fence going back', () => {
    expect(checkHistory(4, 3, ['1:0:0', '3:1:0', '3:0:1', '2:2:0'])).toMatchObject({
      lostUpdates: 1,
      fenceInversions: 2,
      violations: 3,
    });
  });

  it('counts entries missing from the list', () => {
    expect(checkHistory(3, 3, ['1:0:0', '2:0:0']).violations).toBe(1);
  });
});
