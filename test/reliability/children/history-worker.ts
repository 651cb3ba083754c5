/**
 * One process of the history checker (../history.spec.ts), serving one run after another (see workerFleet):
 * several workers doing locked cycles on one key.
 * Inside each critical section: a deliberately non-atomic read-modify-write of a Redis counter (GET, a
 * pause, SET) and an RPUSH of the lock's fence. Any two critical sections that overlap lose an update
 * (the counter ends below the cycle count) or push fences out of order.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { LockNotAcquiredError, type LockModuleOptions } from '../../../lib';
import { type ChildMessage, receive, runChild, startHistoryWorker } from './child-runtime';

export interface HistoryWorkerConfig {
  readonly lockOptions: LockModuleOptions;
  /** Where the counter and the fence list live (a Redis of their own, not one of the lock's). */
  readonly dataUrl: string;
  readonly lockKey: string;
  readonly counterKey: string;
  readonly historyKey: string;
  /** Names this process in the history entries. */
  readonly processIndex: number;
  readonly workers: number;
  /** No cycle starts after this many ms from 'go', once `minCycles` are completed. */
  readonly durationMs: number;
  /**
   * Critical sections this process completes however long they take: on a slow machine the run lasts longer
   * instead of proving less.
   */
  readonly minCycles: number;
  /** Cap on the cycles of this process. */
  readonly maxCycles: number;
  /** `false`: the same cycles without the lock (the checker's control run: it must find violations). */
  readonly locked: boolean;
}

/** From the parent: run once with this config. */
export interface HistoryRun extends ChildMessage {
  readonly type: 'run';
  readonly config: HistoryWorkerConfig;
}

/** One history entry: `<fence>:<process>:<worker>`. */
export function historyEntry(fence: number, processIndex: number, worker: number): string {
  return `${fence}:${processIndex}:${worker}`;
}

export interface HistoryReport extends ChildMessage {
  readonly type: 'done';
  /** Critical sections that ran to the end (counter written, fence pushed). */
  readonly completed: number;
  /** Attempts that gave up after `wait` (LockNotAcquiredError). */
  readonly busy: number;
  /** Critical sections during which the lock's signal aborted (the lock was lost while held). */
  readonly lostInside: number;
  /** Any other error, by message (should stay empty). */
  readonly errors: readonly string[];
}

runChild(async () => {
  for (;;) {
    const { config } = await receive<HistoryRun>('run');
    await runOnce(config);
  }
});

async function runOnce(config: HistoryWorkerConfig): Promise<void> {
  const { locks, data, finish } = await startHistoryWorker(config.lockOptions, config.dataUrl);

  const deadline = performance.now() + config.durationMs;
  const report = { completed: 0, busy: 0, lostInside: 0, errors: [] as string[] };
  let started = 0;

  const criticalSection = async (fence: number, worker: number, signal?: AbortSignal): Promise<void> => {
    const before = Number((await data.get(config.counterKey)) ?? 0);
    // The gap a lost update needs: another writer reading the same value before this one writes.
    await sleep(Math.random() < 0.5 ? 0 : 1);
    await data.set(config.counterKey, String(before + 1));
    await data.rpush(config.historyKey, historyEntry(fence, config.processIndex, worker));
    if (signal?.aborted) report.lostInside++;
    report.completed++;
  };

  const worker = async (index: number): Promise<void> => {
    while ((performance.now() < deadline || report.completed < config.minCycles) && started < config.maxCycles) {
      started++;
      try {
        if (config.locked)
          await locks.withLock(config.lockKey, (lock) => criticalSection(lock.fence, index, lock.signal));
        else await criticalSection(0, index);
      } catch (error) {
        if (error instanceof LockNotAcquiredError) report.busy++;
        else if (report.errors.length < 10) report.errors.push(`${(error as Error).name}: ${(error as Error).message}`);
      }
    }
  };
  await Promise.all(Array.from({ length: config.workers }, (_, index) => worker(index)));

  await finish({ type: 'done', ...report } satisfies HistoryReport);
}
