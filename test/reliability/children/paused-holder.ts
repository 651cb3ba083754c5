/**
 * The holder of the paused-holder scenario (../paused-holder.spec.ts). It takes the lock, says so, and is
 * then frozen by the parent (SIGSTOP: a stop-the-world GC pause, a stopped VM) past its lease. After it is
 * thawed it attempts the write it was about to make, through the fenced writer, without looking at its
 * signal first (a write already on its way when the pause hit), and reports what happened.
 */
import Redis from 'ioredis';
import { FencedWriteRejectedError, FencedWriter, LockService, type LockModuleOptions } from '../../../lib';
import { type ChildMessage, childConfig, createLockContext, receive, runChild, send } from './child-runtime';

export interface PausedHolderConfig {
  readonly lockOptions: LockModuleOptions;
  readonly dataUrl: string;
  readonly lockKey: string;
  readonly resourceKey: string;
}

export interface HoldingMessage extends ChildMessage {
  readonly type: 'holding';
  readonly fence: number;
  readonly token: string;
}

export interface PausedHolderReport extends ChildMessage {
  readonly type: 'result';
  /** Wall-clock time (ms, sub-ms precision) at which the lock's signal aborted; null if it never did. */
  readonly abortedAt: number | null;
  /** The class name of the signal's reason. */
  readonly abortReason: string | null;
  /** Whether the signal had already aborted when the write was attempted. */
  readonly abortedBeforeWrite: boolean;
  /** 'written', or the class name of the error the write was refused with. */
  readonly write: string;
  readonly lastFence: number | null;
  /** What release() answered afterwards. */
  readonly released: boolean;
}

/** Wall-clock ms with sub-ms precision, comparable across processes of one machine. */
export function wallClock(): number {
  return performance.timeOrigin + performance.now();
}

runChild(async () => {
  const config = childConfig<PausedHolderConfig>();
  const app = await createLockContext(config.lockOptions);
  const data = new Redis(config.dataUrl);
  const writer = new FencedWriter(data);
  const lock = await app.get(LockService).acquire(config.lockKey);
  let abortedAt: number | null = null;
  lock.signal.addEventListener('abort', () => (abortedAt = wallClock()), { once: true });
  send({ type: 'holding', fence: lock.fence, token: lock.token } satisfies HoldingMessage);

  await receive('write');
  const abortedBeforeWrite = lock.signal.aborted;
  let write = 'written';
  let lastFence: number | null = null;
  try {
    await writer.set(config.resourceKey, `written by the paused holder (fence ${lock.fence})`, lock);
  } catch (error) {
    write = (error as Error).constructor.name;
    if (error instanceof FencedWriteRejectedError) lastFence = error.lastFence;
  }
  const released = await lock.release();
  send({
    type: 'result',
    abortedAt,
    abortReason: lock.signal.aborted ? (lock.signal.reason as Error).constructor.name : null,
    abortedBeforeWrite,
    write,
    lastFence,
    released,
  } satisfies PausedHolderReport);
  data.disconnect();
  await app.close();
  process.disconnect();
});
