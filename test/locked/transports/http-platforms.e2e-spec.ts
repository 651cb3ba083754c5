import { Body, Controller, Injectable, Param, Post } from '@nestjs/common';
import { APP_FILTER } from '@nestjs/core';
import request from 'supertest';
import { LockErrorFilter } from '../../../lib';
import { Locked } from '../../../lib/decorators';
import { startRedis, type RedisProcess } from '../../support/redis-server';
import { Gates } from '../helpers/gates';
import { RecordingLogger, startHttpApp, type HttpTransportApp } from '../helpers/transport-apps';

/**
 * What an HTTP client receives for each lock error, on Express and on Fastify: from a @Locked route
 * (LockInterceptor), and from a @Locked service method called by a plain route (LockErrorFilter, registered
 * with APP_FILTER; the module's own mapping, `errorMapping`, is off here so that the filter alone answers:
 * service-errors-map-themselves.e2e-spec.ts covers the mapping). Real Nest apps on both platforms, real
 * Redis, supertest.
 */

const TTL_MS = 10_000;
const gates = new Gates();
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
  @Locked('payment:{0}', { wait: 0 })
  async capture(id: string | undefined) {
    await gates.get(`payment ${id}`).pass();
    return { captured: id };
  }
}

@Controller()
class OrdersController {
  constructor(private readonly payments: PaymentsService) {}

  @Post('orders/:id')
  @Locked('order:{params.id}', { wait: 0 })
  async pay(@Param('id') id: string) {
    await gates.get(`order ${id}`).pass();
    return { paid: id };
  }

  @Post('tenant-orders')
  @Locked('tenant-order:{body.orderId}', { wait: 0 })
  create(@Body() body: { orderId?: string }) {
    return { created: body.orderId };
  }

  /** Not @Locked itself: the service method it calls is. */
  @Post('payments')
  capture(@Body() body: { id?: string }) {
    return this.payments.capture(body.id);
  }
}

const scenario = {
  controllers: [OrdersController],
  providers: [PaymentsService, { provide: APP_FILTER, useClass: LockErrorFilter }],
};

describe.each(['express', 'fastify'] as const)(
  'lock errors over HTTP on %s (real Nest app, real Redis)',
  (platform) => {
    let redis: RedisProcess;
    let http: HttpTransportApp;
    const logger = new RecordingLogger();
    /** Sent at once (a supertest request only starts when awaited). */
    const post = (path: string, body: object = {}): Promise<request.Response> =>
      request(http.server)
        .post(path)
        .send(body)
        .then((response) => response);

    /** Runs `first` up to its gate, then `second` while it holds the lock; opens the gate; both answers. */
    async function whileHeld(
      gate: string,
      first: () => Promise<request.Response>,
      second: () => Promise<request.Response>,
    ) {
      const held = first();
      await gates.get(gate).reached();
      const busy = await second();
      gates.get(gate).open();
      return { held: await held, busy };
    }

    beforeAll(async () => {
      redis = await startRedis();
      http = await startHttpApp(platform, redis.url, scenario, logger, { ttl: TTL_MS, errorMapping: false });
    });
    afterAll(async () => {
      gates.openAll();
      await http?.close();
      await redis?.stop();
    });

    describe('a @Locked route', () => {
      it('busy: 409, Retry-After in whole seconds, code LOCK_BUSY with keys and retryAfterMs; logged at debug only', async () => {
        const mark = logger.entries.length;
        const { held, busy } = await whileHeld(
          `order ${platform}-1`,
          () => post(`/orders/${platform}-1`),
          () => post(`/orders/${platform}-1`),
        );

        expect(held.status).toBe(201);
        expect(busy.status).toBe(409);
        expect(busy.body).toEqual({
          statusCode: 409,
          error: 'Conflict',
          code: 'LOCK_BUSY',
          message: BUSY_MESSAGE(`order:${platform}-1`),
          keys: [`order:${platform}-1`],
          retryAfterMs: expect.any(Number),
        });
        expect(busy.body.retryAfterMs).toBeGreaterThan(0);
        expect(busy.body.retryAfterMs).toBeLessThanOrEqual(TTL_MS);
        expect(busy.headers['retry-after']).toBe(String(Math.max(1, Math.ceil(busy.body.retryAfterMs / 1000))));

        expect(logger.since(mark, 'error')).toEqual([]);
        expect(logger.since(mark, 'debug')).toContainEqual({
          level: 'debug',
          context: 'LockInterceptor',
          message: BUSY_LOG(`order:${platform}-1`),
        });
      });

      it('Retry-After comes from how long the route holds the key, not from the 10 s lease', async () => {
        // One hold of about 300 ms through this route teaches the estimate; the lease stays 10 s (renewed).
        const warmUp = post(`/orders/${platform}-warm`);
        await gates.get(`order ${platform}-warm`).reached();
        await new Promise((resolve) => setTimeout(resolve, 300));
        gates.get(`order ${platform}-warm`).open();
        expect((await warmUp).status).toBe(201);

        const { busy } = await whileHeld(
          `order ${platform}-2`,
          () => post(`/orders/${platform}-2`),
          () => post(`/orders/${platform}-2`),
        );
        expect(busy.status).toBe(409);
        // The typical hold (~300 ms) minus what the holder has held so far: well under the lease. The bound is
        // half the lease, not 1 s: a stall during either hold lengthens it and so the estimate, while the defect
        // (the lease's remaining time) reads ~10 s.
        expect(busy.body.retryAfterMs).toBeGreaterThan(0);
        expect(busy.body.retryAfterMs).toBeLessThan(TTL_MS / 2);
        expect(busy.headers['retry-after']).toBe(String(Math.max(1, Math.ceil(busy.body.retryAfterMs / 1000))));
      });

      it('bad key: 400, code LOCK_INVALID_KEY naming the placeholder; logged at debug only', async () => {
        const mark = logger.entries.length;
        const response = await post('/tenant-orders', {});
        expect(response.status).toBe(400);
        expect(response.headers['retry-after']).toBeUndefined();
        expect(response.body).toEqual({
          statusCode: 400,
          error: 'Bad Request',
          code: 'LOCK_INVALID_KEY',
          message: BAD_KEY_MESSAGE('tenant-order:{body.orderId}', '{body.orderId}'),
        });
        expect(logger.since(mark, 'error')).toEqual([]);
      });
    });

    describe('a @Locked service method called from a plain route, with LockErrorFilter registered', () => {
      it('busy: the same 409, Retry-After and body as a @Locked route', async () => {
        const mark = logger.entries.length;
        const { held, busy } = await whileHeld(
          `payment ${platform}-1`,
          () => post('/payments', { id: `${platform}-1` }),
          () => post('/payments', { id: `${platform}-1` }),
        );
        expect(held.status).toBe(201);
        expect(held.body).toEqual({ captured: `${platform}-1` });
        expect(busy.status).toBe(409);
        expect(busy.body).toEqual({
          statusCode: 409,
          error: 'Conflict',
          code: 'LOCK_BUSY',
          message: BUSY_MESSAGE(`payment:${platform}-1`),
          keys: [`payment:${platform}-1`],
          retryAfterMs: expect.any(Number),
        });
        expect(busy.headers['retry-after']).toBe(String(Math.max(1, Math.ceil(busy.body.retryAfterMs / 1000))));
        expect(logger.since(mark, 'error')).toEqual([]);
        expect(logger.since(mark, 'debug')).toContainEqual({
          level: 'debug',
          context: 'LockErrorFilter',
          message: BUSY_LOG(`payment:${platform}-1`),
        });
      });

      it('bad key: 400 naming the placeholder, not 500', async () => {
        const response = await post('/payments', {});
        expect(response.status).toBe(400);
        expect(response.body).toEqual({
          statusCode: 400,
          error: 'Bad Request',
          code: 'LOCK_INVALID_KEY',
          message: BAD_KEY_MESSAGE('payment:{0}', '{0}'),
        });
      });
    });

    describe('Redis down (the server killed)', () => {
      afterAll(() => redis.restart());

      it('a @Locked route and a @Locked service method both answer 503 with code LOCK_UNAVAILABLE, logged as a warning', async () => {
        await redis.kill();
        const mark = logger.entries.length;
        gates.get(`order ${platform}-down`).open();
        gates.get(`payment ${platform}-down`).open();

        for (const [response, key] of [
          [await post(`/orders/${platform}-down`), `order:${platform}-down`],
          [await post('/payments', { id: `${platform}-down` }), `payment:${platform}-down`],
        ] as const) {
          expect(response.status).toBe(503);
          expect(response.headers['retry-after']).toBeUndefined();
          expect(response.body).toEqual({
            statusCode: 503,
            error: 'Service Unavailable',
            code: 'LOCK_UNAVAILABLE',
            // The store's detail (host, port, driver error) stays in the server's log.
            message: `Lock store unavailable for "${key}"; try again later.`,
          });
        }
        expect(gates.get(`order ${platform}-down`).arrivals).toBe(0);
        expect(gates.get(`payment ${platform}-down`).arrivals).toBe(0);
        const warnings = logger.since(mark, 'warn').map((entry) => entry.context);
        expect(warnings).toContain('LockInterceptor');
        expect(warnings).toContain('LockErrorFilter');
      });
    });
  },
);
