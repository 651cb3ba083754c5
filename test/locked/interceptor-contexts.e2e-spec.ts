import type { CallHandler } from '@nestjs/common';
import { ExecutionContextHost } from '@nestjs/core/helpers/execution-context-host';
import { RpcException } from '@nestjs/microservices';
import { WsException } from '@nestjs/websockets';
import { firstValueFrom, lastValueFrom, of, defer } from 'rxjs';
import { InvalidLockKeyError, LockService } from '../../lib';
import { Locked } from '../../lib/decorators';
import { LockInterceptor } from '../../lib/interceptors/lock.interceptor';
import { startRedis, type RedisProcess } from '../support/redis-server';
import { startLockedApp, type LockedApp } from './helpers/locked-app';

/**
 * The interceptor in the non-HTTP transports, driven through Nest's own ExecutionContextHost: keys come
 * from the payload, and the lock errors leave in the transport's own exception class. What a real client
 * of each transport receives is in transports/*.e2e-spec.ts.
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

  it('rpc: a busy key is an RpcException (the real class) carrying code, keys and retryAfterMs', async () => {
    const holder = await locks.acquire('rpc-order:busy');
    try {
      const attempt = firstValueFrom(
        interceptor.intercept(contextOf('rpc', [{ orderId: 'busy' }, {}]), handlerReportingLock),
      );
      const error: unknown = await attempt.catch((caught: unknown) => caught);
      expect(error).toBeInstanceOf(RpcException);
      expect((error as RpcException).getError()).toEqual({
        status: 'error',
        code: 'LOCK_BUSY',
        message: expect.stringMatching(/^Lock on "rpc-order:busy" not acquired: held by another owner\./),
        keys: ['rpc-order:busy'],
        retryAfterMs: expect.any(Number),
      });
    } finally {
      await holder.release();
    }
  });

  it('ws: a missing payload value is a WsException naming the placeholder, and the acknowledgement is answered', async () => {
    const acknowledged: unknown[] = [];
    const args = [{}, {}, (response: unknown) => acknowledged.push(response), 'pay'];
    const error: unknown = await firstValueFrom(
      interceptor.intercept(contextOf('ws', args), handlerReportingLock),
    ).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(WsException);
    const body = { status: 'error', code: 'LOCK_INVALID_KEY', message: expect.stringContaining('{data.orderId}') };
    expect((error as WsException).getError()).toEqual(body);
    expect(acknowledged).toEqual([body]);
  });

  it('graphql: a busy key is an error whose extensions carry code, keys and retryAfterMs', async () => {
    const holder = await locks.acquire('rpc-order:gbusy');
    try {
      const args = [{}, { orderId: 'gbusy' }, { req: { headers: {} } }, {}];
      const error = (await firstValueFrom(
        interceptor.intercept(contextOf('graphql', args), handlerReportingLock),
      ).catch((caught: unknown) => caught)) as { message: string; extensions: unknown };
      expect(error.message).toMatch(/^Lock on "rpc-order:gbusy" not acquired/);
      expect(error.extensions).toEqual({
        code: 'LOCK_BUSY',
        keys: ['rpc-order:gbusy'],
        retryAfterMs: expect.any(Number),
      });
    } finally {
      await holder.release();
    }
  });

  it('another context type (a custom transport): the lock error as it is', async () => {
    // Such a context has no `data` for the template: an InvalidLockKeyError, left unmapped.
    const attempt = firstValueFrom(
      interceptor.intercept(contextOf('kafka-like', [{ orderId: 'custom' }]), handlerReportingLock),
    );
    await expect(attempt).rejects.toBeInstanceOf(InvalidLockKeyError);
  });
});
