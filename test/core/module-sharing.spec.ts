import { Injectable, Logger, Module } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { LockModule, LockOptionsError, LockService } from '../../lib';
import { LOCK_OPTIONS } from '../../lib/lock.constants';
import { resolveLockOptions } from '../../lib/options/module-options.resolver';
import { quietLogger, uniqueKey } from '../support/lock-app';
import { rejectionOf } from './helpers/timing';

/** A feature module's service that injects LockService. */
@Injectable()
class OrdersService {
  constructor(readonly locks: LockService) {}
}

/** The README's way without isGlobal: one module imports LockModule.forRoot() and re-exports it. */
@Module({ imports: [LockModule.forRoot({})], exports: [LockModule] })
class LocksModule {}

@Module({ imports: [LocksModule], providers: [OrdersService] })
class OrdersModule {}

@Module({ imports: [LocksModule], providers: [OrdersService] })
class BillingModule {}

/** Injects LockService like OrdersService; a class of its own, so each module's instance can be told apart. */
@Injectable()
class BillingService {
  constructor(readonly locks: LockService) {}
}

/** Feature modules that each import LockModule.forRoot() again, beside the root's own. */
@Module({ imports: [LockModule.forRoot()], providers: [OrdersService] })
class SelfImportingOrdersModule {}

@Module({ imports: [LockModule.forRoot({ keyPrefix: 'billing:' })], providers: [BillingService] })
class SelfImportingBillingModule {}

/** Injects the LockService of a global LockModule.forRoot(). */
@Module({ providers: [OrdersService] })
class GlobalUserModule {}

/** What a fresh-user trial did from the README's former wording: the bare LockModule class, no forRoot. */
@Module({ imports: [LockModule], providers: [OrdersService] })
class BareImportModule {}

/** The warnings logged while `body` runs whose message matches `pattern`. */
async function warningsDuring(pattern: RegExp, body: () => Promise<void>): Promise<string[]> {
  const warn = vi.spyOn(Logger.prototype, 'warn');
  try {
    await body();
    return warn.mock.calls.map(([message]) => String(message)).filter((message) => pattern.test(message));
  } finally {
    warn.mockRestore();
  }
}

async function initAndClose(
  imports: NonNullable<Parameters<typeof Test.createTestingModule>[0]['imports']>,
): Promise<void> {
  const app = await Test.createTestingModule({ imports }).setLogger(quietLogger()).compile();
  await app.init();
  await app.close();
}

const IMPORTED_TWICE = /LockModule\.forRoot \/ forRootAsync is imported/;

describe('sharing one LockModule without isGlobal', () => {
  it('feature modules that import a module re-exporting LockModule.forRoot() get the same LockService', async () => {
    const app = await Test.createTestingModule({ imports: [OrdersModule, BillingModule] })
      .setLogger(quietLogger())
      .compile();
    await app.init();
    try {
      const orders = app.select(OrdersModule).get(OrdersService);
      const billing = app.select(BillingModule).get(OrdersService);
      expect(orders.locks).toBe(billing.locks);
      // One service, so one in-process store: a key held through one feature module is busy for the other.
      const key = uniqueKey('shared');
      const held = await orders.locks.acquire(key);
      expect(await billing.locks.tryAcquire(key)).toBeNull();
      await held.release();
    } finally {
      await app.close();
    }
  });

  it('one forRoot shared by re-export, or one global forRoot, logs no warning about a second import', async () => {
    const warnings = await warningsDuring(IMPORTED_TWICE, async () => {
      await initAndClose([OrdersModule, BillingModule]);
      await initAndClose([LockModule.forRoot({ isGlobal: true }), GlobalUserModule]);
    });
    expect(warnings).toEqual([]);
  });

  it('forRoot imported again by feature modules warns once at bootstrap, naming each import and its store', async () => {
    let split = false;
    const warnings = await warningsDuring(IMPORTED_TWICE, async () => {
      const app = await Test.createTestingModule({
        imports: [LockModule.forRoot({ isGlobal: true }), SelfImportingOrdersModule, SelfImportingBillingModule],
      })
        .setLogger(quietLogger())
        .compile();
      await app.init();
      try {
        // What the warning is about: Nest made three LockModules, and their in-process stores do not exclude each other.
        const orders = app.get(OrdersService).locks;
        const billing = app.get(BillingService).locks;
        const key = uniqueKey('split');
        const held = await orders.acquire(key);
        const second = await billing.tryAcquire(key);
        split = second !== null;
        await second?.release();
        await held.release();
      } finally {
        await app.close();
      }
    });
    expect(split).toBe(true);
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toContain('is imported 3 times in this application');
    expect(warnings[0]).toContain("the in-process store, keyPrefix 'lock:' (isGlobal)");
    expect(warnings[0]).toContain("the in-process store, keyPrefix 'lock:' (imported by SelfImportingOrdersModule)");
    expect(warnings[0]).toContain(
      "the in-process store, keyPrefix 'billing:' (imported by SelfImportingBillingModule)",
    );
    expect(warnings[0]).toContain(
      'Import it in one place: once with isGlobal: true, or in a module of yours that exports LockModule',
    );
  });

  it('forRootAsync imports count too, with URLs redacted; options overridden with one object for all still warn once', async () => {
    // A Redis URL nobody dials: the module connects lazily, at the first lock call.
    const url = 'redis://user:s3cret@127.0.0.1:1';
    @Module({ imports: [LockModule.forRootAsync({ useFactory: () => ({ redis: url }) })], providers: [BillingService] })
    class AsyncBillingModule {}
    const warnings = await warningsDuring(IMPORTED_TWICE, async () => {
      await initAndClose([LockModule.forRootAsync({ useFactory: () => ({}) }), AsyncBillingModule]);
      const app = await Test.createTestingModule({ imports: [SelfImportingOrdersModule, SelfImportingBillingModule] })
        .overrideProvider(LOCK_OPTIONS)
        .useValue(resolveLockOptions({}))
        .setLogger(quietLogger())
        .compile();
      await app.init();
      await app.close();
    });
    expect(warnings).toHaveLength(2);
    expect(warnings[0]).toContain(
      "Redis at redis://user:***@127.0.0.1:1, keyPrefix 'lock:' (imported by AsyncBillingModule)",
    );
    expect(warnings[0]).not.toContain('s3cret');
    expect(warnings[1]).toContain('is imported 2 times in this application');
  });

  it('importing the bare LockModule class (no forRoot) fails the bootstrap: it has no options', async () => {
    const error = await rejectionOf(Test.createTestingModule({ imports: [BareImportModule] }).compile());
    // The library's own error, not Nest's "can't resolve dependencies of the LOCK:OPTIONS" (trials 5 and 6).
    expect(error).toBeInstanceOf(LockOptionsError);
    expect((error as Error).message).toMatch(
      /^Invalid lock option 'LockModule import': the LockModule class, without forRoot\(\) or forRootAsync\(\)\. Expected LockModule\.forRoot\(options\) or LockModule\.forRootAsync/,
    );
  });
});
