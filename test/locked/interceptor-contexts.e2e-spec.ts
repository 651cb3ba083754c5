import type { CallHandler } from '@nestjs/common';
import { ExecutionContextHost } from '@nestjs/core/helpers/execution-context-host';
import { firstValueFrom, lastValueFrom, of, defer } from 'rxjs';
import { InvalidLockKeyError, LockNotAcquiredError, LockService } from '../../lib';
import { Locked } from '../../lib/decorators';
import { LockInterceptor } from '../../lib/lock.interceptor';
import { startRedis, type RedisProcess } from '../support/redis-server';
import { startLockedApp, type LockedApp } from './helpers/locked-app';

/**
 * The interceptor in the non-HTTP transports, driven through Nest's own ExecutionContextHost (the RPC,
 * WebSocket and GraphQL packages are not installed): keys come from the payload, and the lock errors are
 * thrown as they are, not as HTTP exceptions.
 */
class Handlers {
  @Locked('rpc-order:{data.orderId}', { wait: 0 })
  rpc() {
    return 'handled';
  }
}

function contextOf(type: string, args: unknown[]): ExecutionContextHost {
  const context = new ExecutionContextHost(args, Handlers, Handlers.prototype.rpc);
  context.setType(type);
  return context;
}

describe('LockInterceptor in RPC, WebSocket and GraphQL contexts (real Redis)', () => {
  let redis: RedisProcess;
  let locked: LockedApp;
  let interceptor: LockInterceptor;
  let locks: LockService;

  beforeAll(async () => {
    redis = await startRedis();
    locked = await startLockedApp(redis.url, {});
    interceptor = locked.app.get(LockInterceptor);
    locks = locked.locks;
  });
  afterAll(async () => {
    await locked?.close();
    await redis?.stop();
  });

  /** A CallHandler whose handler reports the lock it runs under. */
  const handlerReportingLock: CallHandler = { handle: () => defer(() => of(locks.current()?.keys)) };

  it.each([
    ['rpc', [{ orderId: 'r1' }, { transportContext: true }], 'rpc-order:r1'],
    ['ws', [{ socket: true }, { orderId: 'w1' }], 'rpc-order:w1'],
    ['graphql', [{ root: true }, { orderId: 'g1' }, { req: { headers: {} } }, { info: true }], 'rpc-order:g1'],
  ])('%s: the key comes from the payload and the handler runs under the lock', async (type, args, key) => {
    const result = await lastValueFrom(interceptor.intercept(contextOf(type, args), handlerReportingLock));
    expect(result).toEqual([key]);
    expect(await locks.isLocked(key)).toBe(false);
  });

  it('rpc: a busy key is a LockNotAcquiredError as it is (no HTTP exception)', async () => {
    const holder = await locks.acquire('rpc-order:busy');
    try {
      const attempt = firstValueFrom(interceptor.intercept(contextOf('rpc', [{ orderId: 'busy' }, {}]), handlerReportingLock));
      await expect(attempt).rejects.toBeInstanceOf(LockNotAcquiredError);
    } finally {
      await holder.release();
    }
  });

  it('ws: a missing payload value is an InvalidLockKeyError as it is, naming the placeholder', async () => {
    const attempt = firstValueFrom(interceptor.intercept(contextOf('ws', [{}, {}]), handlerReportingLock));
    await expect(attempt).rejects.toBeInstanceOf(InvalidLockKeyError);
    await expect(attempt).rejects.toThrow(/\{data\.orderId\}/);
  });
});
