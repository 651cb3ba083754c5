import { ConsoleLogger } from '@nestjs/common';
import { Test, TestingModule } from '@nestjs/testing';
import { randomBytes } from 'node:crypto';
import { LockModule, LockModuleOptions, LockService } from '../../lib';

/** One Nest application context holding a LockModule: its own store and connections. */
export interface LockApp {
  readonly module: TestingModule;
  readonly locks: LockService;
  /** Closes the module (shutdown hooks run). Idempotent. */
  close(): Promise<void>;
}

/** Only errors reach the test output: the in-process store's startup warning would repeat in every test. */
export function quietLogger(): ConsoleLogger {
  return new ConsoleLogger({ logLevels: ['error', 'fatal'] });
}

/** Compiles and initialises `Test.createTestingModule({ imports: [LockModule.forRoot(options)] })`. */
export async function createLockApp(options: LockModuleOptions): Promise<LockApp> {
  const module = await Test.createTestingModule({ imports: [LockModule.forRoot(options)] })
    .setLogger(quietLogger())
    .compile();
  await module.init();
  let closing: Promise<void> | undefined;
  return { module, locks: module.get(LockService), close: () => (closing ??= module.close()) };
}

/**
 * Creates lock apps for the running test and closes every one of them after it (afterEach), so a failed
 * assertion never leaves connections or renewal timers behind. Call at describe level.
 */
export function trackLockApps(): { start(options: LockModuleOptions): Promise<LockApp> } {
  const apps: LockApp[] = [];
  afterEach(async () => {
    const closing = apps.splice(0).map((app) => app.close());
    await Promise.allSettled(closing);
  });
  return {
    start: async (options) => {
      const app = await createLockApp(options);
      apps.push(app);
      return app;
    },
  };
}

/** A key no other test uses: `label-<random hex>`. */
export function uniqueKey(label: string): string {
  return `${label}-${randomBytes(5).toString('hex')}`;
}

/**
 * Opens the module's connections before a test's first lock. They open lazily, on the first command, which
 * then also pays for the connect and ready check within its own timeout: a fifth of a short test ttl (100 ms
 * at ttl 500) is too little on a loaded machine. isLocked has the 1 s timeout of a call without a ttl, and
 * emits no event, metric or span.
 */
export async function connected(locks: LockService): Promise<LockService> {
  await locks.isLocked(uniqueKey('connect'));
  return locks;
}
