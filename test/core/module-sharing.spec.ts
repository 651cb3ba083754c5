import { Injectable, Module } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { LockModule, LockOptionsError, LockService } from '../../lib';
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

/** What a fresh-user trial did from the README's former wording: the bare LockModule class, no forRoot. */
@Module({ imports: [LockModule], providers: [OrdersService] })
class BareImportModule {}

describe('sharing one LockModule without isGlobal', () => {
  it('feature modules that import a module re-exporting LockModule.forRoot() get the same LockService', async () => {
    const app = await Test.createTestingModule({ imports: [OrdersModule, BillingModule] }).setLogger(quietLogger()).compile();
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

  it('importing the bare LockModule class (no forRoot) fails the bootstrap: it has no options', async () => {
    const error = await rejectionOf(Test.createTestingModule({ imports: [BareImportModule] }).compile());
    // The library's own error, not Nest's "can't resolve dependencies of the LOCK:OPTIONS" (trials 5 and 6).
    expect(error).toBeInstanceOf(LockOptionsError);
    expect((error as Error).message).toMatch(
      /^Invalid lock option 'LockModule import': the LockModule class, without forRoot\(\) or forRootAsync\(\)\. Expected LockModule\.forRoot\(options\) or LockModule\.forRootAsync/,
    );
  });
});
