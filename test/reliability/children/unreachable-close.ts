/**
 * The process of the close-while-unreachable scenario (../shutdown-signal.spec.ts): a lock call against a
 * Redis nobody listens on fails, then `app.close()`; from then on nothing of the module may keep the
 * process alive. The IPC channel is let go of after 'closed', so the process ends as soon as its own
 * handles are gone; if something still holds it 600 ms later, it reports what and exits with code 3.
 */
import { LockService, LockUnavailableError, type LockModuleOptions } from '../../../lib';
import { type ChildMessage, childConfig, createLockContext, runChild, send } from './child-runtime';

export interface UnreachableCloseConfig {
  readonly lockOptions: LockModuleOptions;
  readonly key: string;
}

export interface ClosedMessage extends ChildMessage {
  readonly type: 'closed';
  /** The class of the lock call's error (LockUnavailableError expected). */
  readonly refusedWith: string;
  /** How long app.close() took, in ms. */
  readonly closeMs: number;
}

export interface LingeringMessage extends ChildMessage {
  readonly type: 'lingering';
  /** process.getActiveResourcesInfo() 600 ms after app.close() resolved. */
  readonly resources: readonly string[];
}

/** Far beyond the 100 ms the module lets a dropped socket close by itself, far below ioredis' default 2 s. */
const LINGER_LIMIT_MS = 600;

runChild(async () => {
  const config = childConfig<UnreachableCloseConfig>();
  const app = await createLockContext(config.lockOptions);
  const refusedWith = await app
    .get(LockService)
    .tryAcquire(config.key)
    .then(
      () => 'granted',
      (error: unknown) => (error instanceof LockUnavailableError ? 'LockUnavailableError' : String(error)),
    );
  const closingAt = performance.now();
  await app.close();
  const closeMs = performance.now() - closingAt;
  send({ type: 'closed', refusedWith, closeMs } satisfies ClosedMessage);
  const lingering = setTimeout(() => {
    send({ type: 'lingering', resources: process.getActiveResourcesInfo() } satisfies LingeringMessage);
    process.exit(3);
  }, LINGER_LIMIT_MS);
  lingering.unref();
  process.channel?.unref();
});
