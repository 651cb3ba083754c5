/**
 * One process of the semaphore / read-write history checker (../primitives-history.spec.ts): workers on a
 * semaphore key (`limit`) and, at the same time, readers and writers on a read-write key (`mode`). Each
 * critical section leaves its events on the data Redis (./primitives-history-events.ts): `call` before
 * asking, `enter` (with the fence) once held, a pause, `exit` before the release. `enter` and `exit` also
 * INCR / DECR a counter of the holders of that kind inside, and `enter` keeps the highest value it saw, in
 * the same script as the push, so the counter and the list agree.
 *
 * One process serves every run of the spec, one after another (a fork and Nest's module loading cost about
 * a second each time): each 'run' message brings the run's config; the worker builds a Nest context for it,
 * answers 'ready', runs at 'go', reports 'done' and closes the context.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { type Lock, LockNotAcquiredError, type LockModuleOptions } from '../../../lib';
import { type ChildMessage, receive, runChild, startHistoryWorker } from './child-runtime';
import { callEvent, enterEvent, eventsKey, exitEvent, type HolderKind, insideKeys } from './primitives-history-events';

export interface PrimitivesHistoryConfig {
  /** `redis` / `nodes`, or neither: the in-process store (a control run: correct in one process only). */
  readonly lockOptions: LockModuleOptions;
  /** Where the events and counters live (a Redis of their own, not one of the lock's). */
  readonly dataUrl: string;
  readonly semaphore: { readonly key: string; readonly limit: number; readonly workers: number };
  readonly readWrite: { readonly key: string; readonly writers: number; readonly readers: number };
  /** Names this process in the attempts (`<process>.<worker>.<cycle>`). */
  readonly processIndex: number;
  /** No cycle starts after this many ms from 'go', once `minCyclesPerWorker` are completed. */
  readonly durationMs: number;
  /**
   * Critical sections each worker completes however long they take: on a slow machine the run lasts longer
   * instead of proving less.
   */
  readonly minCyclesPerWorker: number;
  /** Cap on the cycles of each worker. */
  readonly maxCyclesPerWorker: number;
  /** `false`: the same cycles without the lock (a control run: the checker must find violations). */
  readonly locked: boolean;
}

/** From the parent: run once with this config. */
export interface PrimitivesHistoryRun extends ChildMessage {
  readonly type: 'run';
  readonly config: PrimitivesHistoryConfig;
}

export interface PrimitivesHistoryReport extends ChildMessage {
  readonly type: 'done';
  /** Critical sections that ran to the end, per key. */
  readonly completed: { readonly semaphore: number; readonly read: number; readonly write: number };
  /** Attempts that gave up after `wait` (LockNotAcquiredError). */
  readonly busy: number;
  /** Critical sections during which the lock's signal aborted (the lock was lost while held). */
  readonly lostInside: number;
  /** Any other error, by message (should stay empty). */
  readonly errors: readonly string[];
}

/** KEYS: inside counter, max, events. ARGV: the event. INCR, keep the max, push: one step for Redis. */
const ENTER_SCRIPT = `
local inside = redis.call('INCR', KEYS[1])
if inside > tonumber(redis.call('GET', KEYS[2]) or '0') then redis.call('SET', KEYS[2], inside) end
redis.call('RPUSH', KEYS[3], ARGV[1])
return inside`;
/** KEYS: inside counter, events. ARGV: the event. */
const EXIT_SCRIPT = `
redis.call('DECR', KEYS[1])
redis.call('RPUSH', KEYS[2], ARGV[1])
return 0`;

runChild(async () => {
  for (;;) {
    const { config } = await receive<PrimitivesHistoryRun>('run');
    await runOnce(config);
  }
});

async function runOnce(config: PrimitivesHistoryConfig): Promise<void> {
  const { locks, data, finish } = await startHistoryWorker(config.lockOptions, config.dataUrl);

  const deadline = performance.now() + config.durationMs;
  const report = { completed: { semaphore: 0, read: 0, write: 0 }, busy: 0, lostInside: 0, errors: [] as string[] };

  /** One critical section on `lockKey`, as `kind`, held for about `holdMs`. */
  const criticalSection = async (
    lockKey: string,
    attempt: string,
    kind: HolderKind,
    lock: Lock | undefined,
    holdMs: number,
  ): Promise<void> => {
    const counter = insideKeys(lockKey, kind);
    await data.eval(
      ENTER_SCRIPT,
      3,
      counter.inside,
      counter.max,
      eventsKey(lockKey),
      enterEvent(attempt, kind, lock?.fence ?? 0),
    );
    // A pause of 0..holdMs ms: long enough for others to come in beside this holder, if they may.
    await sleep(Math.floor(Math.random() * (holdMs + 1)));
    await data.eval(EXIT_SCRIPT, 2, counter.inside, eventsKey(lockKey), exitEvent(attempt, kind));
    if (lock?.signal.aborted) report.lostInside++;
  };

  const worker = async (
    lockKey: string,
    worker: string,
    kind: HolderKind,
    holdMs: number,
    options: { limit?: number; mode?: 'read' | 'write' },
  ): Promise<void> => {
    let completed = 0;
    for (
      let cycle = 0;
      (performance.now() < deadline || completed < config.minCyclesPerWorker) && cycle < config.maxCyclesPerWorker;
      cycle++
    ) {
      const attempt = `${config.processIndex}.${worker}.${cycle}`;
      try {
        await data.rpush(eventsKey(lockKey), callEvent(attempt));
        if (config.locked)
          await locks.withLock(lockKey, (lock) => criticalSection(lockKey, attempt, kind, lock, holdMs), options);
        else await criticalSection(lockKey, attempt, kind, undefined, holdMs);
        completed++;
        if (kind === 'permit') report.completed.semaphore++;
        else report.completed[kind]++;
      } catch (error) {
        if (error instanceof LockNotAcquiredError) report.busy++;
        else if (report.errors.length < 10) report.errors.push(`${(error as Error).name}: ${(error as Error).message}`);
      }
    }
  };

  const { semaphore, readWrite } = config;
  await Promise.all([
    ...Array.from({ length: semaphore.workers }, (_, i) =>
      worker(semaphore.key, `s${i}`, 'permit', 3, { limit: semaphore.limit }),
    ),
    // Writers hold briefly; readers longer, so that they overlap one another.
    ...Array.from({ length: readWrite.writers }, (_, i) =>
      worker(readWrite.key, `w${i}`, 'write', 2, { mode: 'write' }),
    ),
    ...Array.from({ length: readWrite.readers }, (_, i) => worker(readWrite.key, `r${i}`, 'read', 4, { mode: 'read' })),
  ]);

  await finish({ type: 'done', ...report } satisfies PrimitivesHistoryReport);
}
