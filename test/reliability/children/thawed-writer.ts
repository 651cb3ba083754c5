/**
 * The holder of the thawed-writer scenario (../paused-holder.spec.ts): it takes the lock, then writes every
 * 50 ms while its signal reads not aborted, as a worker checking `lock.signal` before each step does. The parent
 * freezes it (SIGSTOP) past its lease and thaws it; it reports when it wrote, and stops at the first read that
 * says aborted.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { LockService, type LockModuleOptions } from '../../../lib';
import { type ChildMessage, childConfig, createLockContext, runChild, send } from './child-runtime';

export interface ThawedWriterConfig {
  readonly lockOptions: LockModuleOptions;
  readonly lockKey: string;
}

export interface ThawedWriterReport extends ChildMessage {
  readonly type: 'result';
  /** Wall-clock times (ms) of the writes it made while its signal read not aborted. */
  readonly writes: readonly number[];
  /** Wall-clock time of the first read that said aborted. */
  readonly abortedReadAt: number;
  readonly reason: string;
}

/** Wall-clock ms with sub-ms precision, comparable across processes of one machine. */
function wallClock(): number {
  return performance.timeOrigin + performance.now();
}

runChild(async () => {
  const config = childConfig<ThawedWriterConfig>();
  const app = await createLockContext(config.lockOptions);
  const lock = await app.get(LockService).acquire(config.lockKey);
  send({ type: 'holding' });
  const writes: number[] = [];
  for (;;) {
    await sleep(50);
    if (lock.signal.aborted) break;
    writes.push(wallClock());
  }
  const abortedReadAt = wallClock();
  send({
    type: 'result',
    writes,
    abortedReadAt,
    reason: (lock.signal.reason as Error).constructor.name,
  } satisfies ThawedWriterReport);
  await lock.release();
  await app.close();
  process.disconnect();
});
