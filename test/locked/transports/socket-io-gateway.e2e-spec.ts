import { Injectable, UseFilters } from '@nestjs/common';
import { MessageBody, SubscribeMessage, WebSocketGateway } from '@nestjs/websockets';
import type { Socket } from 'socket.io-client';
import { LockErrorFilter } from '../../../lib';
import { Locked } from '../../../lib/decorators';
import { startRedis, type RedisProcess } from '../../support/redis-server';
import { Gates } from '../helpers/gates';
import { connectSocket, RecordingLogger, startHttpApp, type HttpTransportApp } from '../helpers/transport-apps';

/**
 * What a socket.io client receives for each lock error: the message's acknowledgement answered with
 * `{ status: 'error', code, message }` (plus keys and retryAfterMs when busy) — never left waiting — and
 * the same object as Nest's `exception` event (a WsException's). From a @Locked message handler
 * (LockInterceptor) and from a @Locked service method (LockErrorFilter: Nest applies no global filter to
 * gateways, so the gateway names it with @UseFilters). The module's own mapping (`errorMapping`) is off here,
 * so that the filter alone answers (service-errors-map-themselves.e2e-spec.ts covers the mapping). Real Nest
 * app, real socket.io client, real Redis.
 */

const gates = new Gates();
const ACK_TIMEOUT_MS = 10_000;
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
  @Locked('ws-payment:{0}', { wait: 0 })
  async capture(id: string | undefined) {
    await gates.get(`payment ${id}`).pass();
    return { captured: id };
  }
}

@WebSocketGateway()
@UseFilters(LockErrorFilter)
class OrdersGateway {
  constructor(private readonly payments: PaymentsService) {}

  @SubscribeMessage('pay')
  @Locked('ws-order:{data.id}', { wait: 0 })
  async pay(@MessageBody() data: { id?: string }) {
    await gates.get(`order ${data.id}`).pass();
    return { paid: data.id };
  }

  @SubscribeMessage('refund')
  @Locked('ws-refund:{data.id}', { wait: 0, onBusy: 'skip' })
  async refund(@MessageBody() data: { id?: string }) {
    await gates.get(`refund ${data.id}`).pass();
    return { refunded: data.id };
  }

  /** Not @Locked itself: the service method it calls is. */
  @SubscribeMessage('capture')
  capture(@MessageBody() data: { id?: string }) {
    return this.payments.capture(data.id);
  }
}

describe('lock errors over a socket.io gateway (real socket.io client, real Redis)', () => {
  let redis: RedisProcess;
  let http: HttpTransportApp;
  let socket: Socket;
  const logger = new RecordingLogger();
  const exceptions: unknown[] = [];

  /** The acknowledgement of one message (rejects only when none comes within ACK_TIMEOUT_MS). */
  const emit = (event: 'pay' | 'capture' | 'refund', data: object): Promise<unknown> =>
    socket.timeout(ACK_TIMEOUT_MS).emitWithAck(event, data);

  async function whileHeld(gate: string, event: 'pay' | 'capture' | 'refund', data: object) {
    const held = emit(event, data);
    await gates.get(gate).reached();
    const busy = await emit(event, data);
    gates.get(gate).open();
    return { held: await held, busy };
  }

  /** The `exception` events received so far, once `count` have arrived. */
  async function exceptionEvents(count: number): Promise<unknown[]> {
    const deadline = performance.now() + ACK_TIMEOUT_MS;
    while (exceptions.length < count && performance.now() < deadline)
      await new Promise((resolve) => setTimeout(resolve, 10));
    return exceptions.splice(0);
  }

  beforeAll(async () => {
    redis = await startRedis();
    http = await startHttpApp('express', redis.url, { providers: [OrdersGateway, PaymentsService] }, logger, {
      errorMapping: false,
    });
    socket = await connectSocket(http.baseUrl);
    socket.on('exception', (body: unknown) => exceptions.push(body));
  });
  afterAll(async () => {
    gates.openAll();
    socket?.disconnect();
    await http?.close();
    await redis?.stop();
  });
  beforeEach(() => {
    exceptions.length = 0;
  });

  it('a @Locked handler, busy: the ack and the exception event carry code LOCK_BUSY, keys, retryAfterMs; debug only', async () => {
    const mark = logger.entries.length;
    const { held, busy } = await whileHeld('order 1', 'pay', { id: '1' });
    const expected = {
      status: 'error',
      code: 'LOCK_BUSY',
      message: BUSY_MESSAGE('ws-order:1'),
      keys: ['ws-order:1'],
      retryAfterMs: expect.any(Number),
    };
    expect(held).toEqual({ paid: '1' });
    expect(busy).toEqual(expected);
    expect((busy as { retryAfterMs: number }).retryAfterMs).toBeGreaterThan(0);
    expect(await exceptionEvents(1)).toEqual([expected]);
    expect(logger.since(mark, 'error')).toEqual([]);
    expect(logger.since(mark, 'debug')).toContainEqual({
      level: 'debug',
      context: 'LockInterceptor',
      message: BUSY_LOG('ws-order:1'),
    });
  });

  it("onBusy: 'skip' on a busy key: the handler does not run and the ack is answered with nothing (not left waiting)", async () => {
    const mark = logger.entries.length;
    // Before: no acknowledgement at all, so emitWithAck timed out after ACK_TIMEOUT_MS.
    const { held, busy } = await whileHeld('refund 1', 'refund', { id: '1' });
    expect(held).toEqual({ refunded: '1' });
    expect(busy).toBeUndefined();
    expect(await exceptionEvents(0)).toEqual([]);
    expect(logger.since(mark, 'error')).toEqual([]);
  });

  it('a @Locked handler, bad key: the ack and the exception event carry code LOCK_INVALID_KEY naming the placeholder', async () => {
    const mark = logger.entries.length;
    const expected = {
      status: 'error',
      code: 'LOCK_INVALID_KEY',
      message: BAD_KEY_MESSAGE('ws-order:{data.id}', '{data.id}'),
    };
    expect(await emit('pay', {})).toEqual(expected);
    expect(await exceptionEvents(1)).toEqual([expected]);
    expect(logger.since(mark, 'error')).toEqual([]);
  });

  it('a @Locked service method under a plain handler, with @UseFilters(LockErrorFilter): the same busy and bad-key answers', async () => {
    const mark = logger.entries.length;
    const { held, busy } = await whileHeld('payment 1', 'capture', { id: '1' });
    const busyBody = {
      status: 'error',
      code: 'LOCK_BUSY',
      message: BUSY_MESSAGE('ws-payment:1'),
      keys: ['ws-payment:1'],
      retryAfterMs: expect.any(Number),
    };
    expect(held).toEqual({ captured: '1' });
    expect(busy).toEqual(busyBody);
    const badKeyBody = { status: 'error', code: 'LOCK_INVALID_KEY', message: BAD_KEY_MESSAGE('ws-payment:{0}', '{0}') };
    expect(await emit('capture', {})).toEqual(badKeyBody);
    expect(await exceptionEvents(2)).toEqual([busyBody, badKeyBody]);
    expect(logger.since(mark, 'error')).toEqual([]);
  });

  describe('Redis down (the server killed)', () => {
    afterAll(() => redis.restart());

    it('handler and service method: the ack carries code LOCK_UNAVAILABLE, logged as a warning', async () => {
      await redis.kill();
      const mark = logger.entries.length;
      for (const [event, key] of [
        ['pay', 'ws-order:down'],
        ['capture', 'ws-payment:down'],
      ] as const) {
        expect(await emit(event, { id: 'down' })).toEqual({
          status: 'error',
          code: 'LOCK_UNAVAILABLE',
          // The store's detail (host, port, driver error) stays in the server's log.
          message: `Lock store unavailable for "${key}"; try again later.`,
        });
      }
      expect(await exceptionEvents(2)).toHaveLength(2);
      expect(gates.get('order down').arrivals).toBe(0);
      expect(gates.get('payment down').arrivals).toBe(0);
      const warnings = logger.since(mark, 'warn').map((entry) => entry.context);
      expect(warnings).toEqual(expect.arrayContaining(['LockInterceptor', 'LockErrorFilter']));
    });
  });
});
