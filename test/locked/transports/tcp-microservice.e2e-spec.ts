import { Controller, Injectable } from '@nestjs/common';
import { APP_FILTER } from '@nestjs/core';
import { EventPattern, MessagePattern, Payload } from '@nestjs/microservices';
import { firstValueFrom } from 'rxjs';
import { LockErrorFilter } from '../../../lib';
import { Locked } from '../../../lib/decorators';
import { startRedis, type RedisProcess } from '../../support/redis-server';
import { Gates } from '../helpers/gates';
import { RecordingLogger, startTcpMicroservice, type TcpTransportApp } from '../helpers/transport-apps';

/**
 * What a microservice client (a real ClientProxy over TCP) receives for each lock error: the error object
 * Nest sends for an RpcException, `{ status: 'error', code, message }` plus keys and retryAfterMs when
 * busy — from a @Locked message handler (LockInterceptor) and from a @Locked service method
 * (LockErrorFilter as APP_FILTER, which Nest applies to microservice handlers). The module's own mapping
 * (`errorMapping`) is off here, so that the filter alone answers (service-errors-map-themselves.e2e-spec.ts
 * covers the mapping).
 */

const gates = new Gates();
const shipped: (string | undefined)[] = [];
/** What the client is told: not the advice about the 'wait' option, which only the developer can set. */
const BUSY_MESSAGE = (key: string) => `Lock on "${key}" not acquired: held by another owner. Retry later.`;
/** What the log says (debug), the error's own message. */
const BUSY_LOG = (key: string) =>
  `Lock on "${key}" not acquired: held by another owner. Retry later, or set the 'wait' option to queue for it.`;
const BAD_KEY_MESSAGE = (template: string, placeholder: string) =>
  `Invalid lock key "${template}": placeholder ${placeholder} is undefined (missing from the call); ` +
  `it must be a non-empty string, a finite number or a boolean.`;

@Injectable()
class PaymentsService {
  @Locked('rpc-payment:{0}', { wait: 0 })
  async capture(id: string | undefined) {
    await gates.get(`payment ${id}`).pass();
    return { captured: id };
  }
}

@Controller()
class OrdersHandlers {
  constructor(private readonly payments: PaymentsService) {}

  @MessagePattern('pay')
  @Locked('rpc-order:{data.id}', { wait: 0 })
  async pay(@Payload() data: { id?: string }) {
    await gates.get(`order ${data.id}`).pass();
    return { paid: data.id };
  }

  /** An event: nobody waits for a reply, so a busy lock is only logged (at debug). */
  @EventPattern('ship')
  @Locked('rpc-ship:{data.id}', { wait: 0 })
  async ship(@Payload() data: { id?: string }) {
    shipped.push(data.id);
    await gates.get(`ship ${data.id}`).pass();
  }

  /** Not @Locked itself: the service method it calls is. */
  @MessagePattern('capture')
  capture(@Payload() data: { id?: string }) {
    return this.payments.capture(data.id);
  }
}

describe('lock errors over a TCP microservice (real ClientProxy, real Redis)', () => {
  let redis: RedisProcess;
  let tcp: TcpTransportApp;
  const logger = new RecordingLogger();

  /** The reply to one message, or what the client's observable errored with. */
  const send = (pattern: 'pay' | 'capture', data: object): Promise<{ reply?: unknown; error?: unknown }> =>
    firstValueFrom(tcp.client.send(pattern, data)).then(
      (reply: unknown) => ({ reply }),
      (error: unknown) => ({ error }),
    );

  async function whileHeld(gate: string, pattern: 'pay' | 'capture', data: object) {
    const held = send(pattern, data);
    await gates.get(gate).reached();
    const busy = await send(pattern, data);
    gates.get(gate).open();
    return { held: await held, busy };
  }

  beforeAll(async () => {
    redis = await startRedis();
    tcp = await startTcpMicroservice(
      redis.url,
      {
        controllers: [OrdersHandlers],
        providers: [PaymentsService, { provide: APP_FILTER, useClass: LockErrorFilter }],
      },
      logger,
      { errorMapping: false },
    );
  });
  afterAll(async () => {
    gates.openAll();
    await tcp?.close();
    await redis?.stop();
  });

  it('a @Locked handler, busy: { status, code LOCK_BUSY, message, keys, retryAfterMs }; logged at debug only', async () => {
    const mark = logger.entries.length;
    const { held, busy } = await whileHeld('order 1', 'pay', { id: '1' });
    expect(held).toEqual({ reply: { paid: '1' } });
    expect(busy).toEqual({
      error: {
        status: 'error',
        code: 'LOCK_BUSY',
        message: BUSY_MESSAGE('rpc-order:1'),
        keys: ['rpc-order:1'],
        retryAfterMs: expect.any(Number),
      },
    });
    expect((busy.error as { retryAfterMs: number }).retryAfterMs).toBeGreaterThan(0);
    expect(logger.since(mark, 'error')).toEqual([]);
    expect(logger.since(mark, 'debug')).toContainEqual({
      level: 'debug',
      context: 'LockInterceptor',
      message: BUSY_LOG('rpc-order:1'),
    });
  });

  it('a @Locked event handler, busy: not run, and logged at debug, not as an ERROR', async () => {
    const mark = logger.entries.length;
    tcp.client.emit('ship', { id: '1' });
    await gates.get('ship 1').reached();
    tcp.client.emit('ship', { id: '1' });
    const deadline = performance.now() + 5_000;
    while (
      !logger.since(mark, 'debug').some((entry) => entry.message === BUSY_LOG('rpc-ship:1')) &&
      performance.now() < deadline
    ) {
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    gates.get('ship 1').open();
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(shipped).toEqual(['1']);
    expect(logger.since(mark, 'debug')).toContainEqual({
      level: 'debug',
      context: 'LockInterceptor',
      message: BUSY_LOG('rpc-ship:1'),
    });
    // Before: Nest 12 logged the RpcException of an event handler at ERROR (no reply stream to carry it).
    expect(logger.since(mark, 'error')).toEqual([]);
  });

  it('a @Locked handler, bad key: { status, code LOCK_INVALID_KEY, message } naming the placeholder', async () => {
    const mark = logger.entries.length;
    expect(await send('pay', {})).toEqual({
      error: {
        status: 'error',
        code: 'LOCK_INVALID_KEY',
        message: BAD_KEY_MESSAGE('rpc-order:{data.id}', '{data.id}'),
      },
    });
    expect(logger.since(mark, 'error')).toEqual([]);
  });

  it('a @Locked service method under a plain handler, with LockErrorFilter: the same busy and bad-key errors', async () => {
    const mark = logger.entries.length;
    const { held, busy } = await whileHeld('payment 1', 'capture', { id: '1' });
    expect(held).toEqual({ reply: { captured: '1' } });
    expect(busy).toEqual({
      error: {
        status: 'error',
        code: 'LOCK_BUSY',
        message: BUSY_MESSAGE('rpc-payment:1'),
        keys: ['rpc-payment:1'],
        retryAfterMs: expect.any(Number),
      },
    });
    expect(await send('capture', {})).toEqual({
      error: { status: 'error', code: 'LOCK_INVALID_KEY', message: BAD_KEY_MESSAGE('rpc-payment:{0}', '{0}') },
    });
    expect(logger.since(mark, 'error')).toEqual([]);
  });

  describe('Redis down (the server killed)', () => {
    afterAll(() => redis.restart());

    it('handler and service method: { status, code LOCK_UNAVAILABLE, message }, logged as a warning', async () => {
      await redis.kill();
      const mark = logger.entries.length;
      for (const [pattern, key] of [
        ['pay', 'rpc-order:down'],
        ['capture', 'rpc-payment:down'],
      ] as const) {
        expect(await send(pattern, { id: 'down' })).toEqual({
          error: {
            status: 'error',
            code: 'LOCK_UNAVAILABLE',
            // The store's detail (host, port, driver error) stays in the server's log.
            message: `Lock store unavailable for "${key}"; try again later.`,
          },
        });
      }
      expect(gates.get('order down').arrivals).toBe(0);
      expect(gates.get('payment down').arrivals).toBe(0);
      const warnings = logger.since(mark, 'warn').map((entry) => entry.context);
      expect(warnings).toEqual(expect.arrayContaining(['LockInterceptor', 'LockErrorFilter']));
    });
  });
});
