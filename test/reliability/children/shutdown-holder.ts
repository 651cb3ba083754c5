/**
 * The process of the shutdown scenario (../shutdown-signal.spec.ts): a Nest application context with
 * `enableShutdownHooks()`, holding locks every way the library hands them out (acquire, a multi-key lock,
 * withLock with a reentrant inner lock, a @Locked provider method in progress), with long leases, so that
 * only a release can free them. The parent then sends SIGTERM.
 */
import { Injectable, Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { Locked, LockModule, LockService, type LockModuleOptions } from '../../../lib';
import { type ChildMessage, childConfig, quietLogger, runChild, send } from './child-runtime';

export interface ShutdownHolderConfig {
  readonly lockOptions: LockModuleOptions;
  /** Distinct keys, at least 6: each way of holding a lock takes its own. */
  readonly keys: readonly string[];
}

export interface HoldingMessage extends ChildMessage {
  readonly type: 'holding';
  /** Every key held now. */
  readonly keys: readonly string[];
}

/** Never settles: the work is still running when the signal comes. */
const endless = (): Promise<never> => new Promise<never>(() => undefined);

@Injectable()
class NightlyJob {
  @Locked('job:{0}')
  run(_tenant: string): Promise<void> {
    return endless();
  }
}

runChild(async () => {
  const config = childConfig<ShutdownHolderConfig>();
  @Module({ imports: [LockModule.forRoot(config.lockOptions)], providers: [NightlyJob] })
  class ShutdownModule {}
  const app = await NestFactory.createApplicationContext(ShutdownModule, { logger: quietLogger() });
  app.enableShutdownHooks();
  const locks = app.get(LockService);
  const [one, two, three, four, five, tenant] = config.keys;

  await locks.acquire(one);
  await locks.acquire([two, three]);
  let inside!: () => void;
  const entered = new Promise<void>((resolve) => (inside = resolve));
  void locks.withLock(four, async () => {
    // Reentrant: the same context takes `four` again, and `five` too.
    await locks.acquire([four, five]);
    inside();
    await endless();
  });
  await entered;
  void app.get(NightlyJob).run(tenant);
  // The job's lock is taken asynchronously: report once it is held.
  while (!(await locks.isLocked(`job:${tenant}`))) await new Promise((resolve) => setTimeout(resolve, 5));

  send({ type: 'holding', keys: [one, two, three, four, five, `job:${tenant}`] } satisfies HoldingMessage);
});
