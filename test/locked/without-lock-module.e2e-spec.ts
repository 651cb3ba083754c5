import { Controller, Injectable, Module, Post } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { Test } from '@nestjs/testing';
import { Locked, LockModule, LockOptionsError } from '../../lib';

@Controller('orders')
class OrdersController {
  @Post(':id/pay')
  @Locked('order:{params.id}')
  pay(): string {
    return 'paid';
  }
}

/**
 * A fresh-app trial found that an application with a @Locked route that never imported LockModule booted, and
 * then answered every request to that route with a bare 500 (Nest's UnknownElementException for LockService).
 */
describe('@Locked route handlers in an application without LockModule', () => {
  it('fail the bootstrap with a LockOptionsError that names LockModule', async () => {
    const module = await Test.createTestingModule({ controllers: [OrdersController] }).compile();
    const app = module.createNestApplication({ logger: false });
    try {
      const failure = await app.init().then(
        () => undefined,
        (error: unknown) => error,
      );
      expect(failure).toBeInstanceOf(LockOptionsError);
      expect((failure as Error).message).toContain('imports LockModule');
    } finally {
      await app.close().catch(() => undefined);
    }
  });

  it('control: the same controller with LockModule imported boots', async () => {
    const module = await Test.createTestingModule({
      imports: [LockModule.forRoot({})],
      controllers: [OrdersController],
    }).compile();
    const app = module.createNestApplication({ logger: false });
    try {
      await expect(app.init()).resolves.toBe(app);
    } finally {
      await app.close();
    }
  });
});

@Injectable()
class NightlyJob {
  @Locked('job:{0}', { wait: 0 })
  async run(id: string): Promise<string> {
    return `ran ${id}`;
  }
}

@Module({ providers: [NightlyJob] })
class WorkerModule {}

/** A worker with @Locked provider methods only (no controllers, no routes): the same early failure, worded for it. */
describe('@Locked provider methods in an application without LockModule', () => {
  it('fail the bootstrap with a LockOptionsError that names LockModule, not a route handler', async () => {
    const failure = await NestFactory.createApplicationContext(WorkerModule, {
      logger: false,
      abortOnError: false,
    }).then(
      async (app) => {
        await app.close();
        return undefined;
      },
      (error: unknown) => error,
    );
    expect(failure).toBeInstanceOf(LockOptionsError);
    expect((failure as Error).message).toBe(
      'Invalid lock option \'@Locked\': "used in an application without LockModule". Expected an application that imports ' +
        'LockModule (LockModule.forRoot() or forRootAsync(), once, e.g. in the root module).',
    );
  });
});
