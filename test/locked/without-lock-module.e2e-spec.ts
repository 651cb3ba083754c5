import { Controller, Post } from '@nestjs/common';
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
    const module = await Test.createTestingModule({ imports: [LockModule.forRoot({})], controllers: [OrdersController] }).compile();
    const app = module.createNestApplication({ logger: false });
    try {
      await expect(app.init()).resolves.toBe(app);
    } finally {
      await app.close();
    }
  });
});
