import {
  Body,
  Controller,
  Get,
  Injectable,
  NotFoundException,
  Param,
  Post,
  UseGuards,
  type CanActivate,
  type ExecutionContext,
} from '@nestjs/common';
import request from 'supertest';
import { LockService, type Lock } from '../../lib';
import { Locked } from '../../lib/decorators';
import { commandStats, resetStats } from '../support/redis-stats';
import { startRedis, type RedisProcess } from '../support/redis-server';
import { firstToSettle, Gates } from './helpers/gates';
import { startLockedApp, type LockedApp } from './helpers/locked-app';

const TTL_MS = 10_000;
const gates = new Gates();
/** Lets a handler reach the test's Redis server (to delete its own lease). */
let redisOfHandlers: RedisProcess;

/** What a handler reports of LockService.current() while it runs. */
function describeCurrent(lock: Lock | undefined) {
  return lock && { keys: lock.keys, fence: lock.fence, aborted: lock.signal.aborted };
}

/** Lets a request through when it carries `x-allow: yes`; otherwise Nest answers 403. */
@Injectable()
class AllowHeaderGuard implements CanActivate {
  canActivate(context: ExecutionContext): boolean {
    return context.switchToHttp().getRequest<{ headers: Record<string, string> }>().headers['x-allow'] === 'yes';
  }
}

@Controller()
class OrdersController {
  constructor(private readonly locks: LockService) {}

  @Post('orders/:id')
  @Locked('order:{params.id}', { wait: 0 })
  async pay(@Param('id') id: string) {
    await gates.get(`order ${id}`).pass();
    return { paid: id, current: describeCurrent(this.locks.current()) };
  }

  @UseGuards(AllowHeaderGuard)
  @Locked('guarded-above:{params.id}', { wait: 0 })
  @Post('guarded-above/:id')
  guardedAbove() {
    return { current: describeCurrent(this.locks.current()) };
  }

  @Locked('guarded-below:{params.id}', { wait: 0 })
  @UseGuards(AllowHeaderGuard)
  @Post('guarded-below/:id')
  guardedBelow() {
    return { current: describeCurrent(this.locks.current()) };
  }

  @Post('tenants/:id/orders')
  @Locked('tenant:{headers.x-tenant}:{body.orderId}', { wait: 0 })
  create(@Body() body: { orderId?: string }) {
    return { created: body.orderId };
  }

  @Post('once/:id')
  @Locked('once:{params.id}', { wait: 0, reentrant: false })
  once() {
    return { once: true };
  }

  /** Loses its lease (deleted behind its back), then tries to extend it: LockLostError. */
  @Post('lost/:id')
  @Locked('lost:{params.id}', { wait: 0 })
  async lose(@Param('id') id: string) {
    const [leaseKey] = (await redisOfHandlers.command('KEYS', `*{lost:${id}}`)) as string[];
    await redisOfHandlers.command('DEL', leaseKey);
    await this.locks.current()!.extend();
    return { extended: true };
  }

  @Locked('item:{params.id}', { wait: 0 })
  @Get('items/:id')
  item(@Param('id') id: string) {
    throw new NotFoundException(`no item ${id}`);
  }
}

describe('@Locked on HTTP route handlers (real Nest app, real Redis)', () => {
  let redis: RedisProcess;
  let locked: LockedApp;
  const post = (path: string) => request(locked.server).post(path);
  /** Commands Redis ran since the last CONFIG RESETSTAT, except this test's own INFO / CONFIG / KEYS. */
  const commandsSinceReset = async () =>
    Object.keys(await commandStats(redis.url)).filter((command) => !/^(info|config|keys)/.test(command));

  beforeAll(async () => {
    redis = await startRedis();
    redisOfHandlers = redis;
    locked = await startLockedApp(
      redis.url,
      { controllers: [OrdersController], providers: [AllowHeaderGuard] },
      { ttl: TTL_MS },
    );
  });
  afterAll(async () => {
    gates.openAll();
    await locked?.close();
    await redis?.stop();
  });

  it('of two concurrent POSTs on one id, one runs (201) and one gets 409 with Retry-After', async () => {
    const gate = gates.get('order 1');
    const first = post('/orders/1').then((response) => response);
    await gate.reached();

    const second = await post('/orders/1');
    expect(second.status).toBe(409);
    const retryAfter = Number(second.headers['retry-after']);
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    expect(retryAfter).toBeLessThanOrEqual(TTL_MS / 1000);
    expect(second.body.message).toMatch(/order:1/);
    expect(gate.arrivals).toBe(1);

    gate.open();
    const done = await first;
    expect(done.status).toBe(201);
    expect(done.body.paid).toBe('1');
  });

  it('another id runs in parallel, and the same id succeeds again right after', async () => {
    const first = post('/orders/2').then((response) => response);
    await gates.get('order 2').reached();
    const other = post('/orders/3').then((response) => response);
    // Order 3 must get inside its handler while order 2 is still inside its own.
    expect(await firstToSettle(gates.get('order 3').reached(), other)).toBe('first');

    gates.get('order 2').open();
    gates.get('order 3').open();
    expect([(await first).status, (await other).status]).toEqual([201, 201]);

    const again = await post('/orders/2');
    expect(again.status).toBe(201);
    expect(await locked.locks.isLocked('order:2')).toBe(false);
  });

  it('inside the handler LockService.current() is the held lock (fence > 0, signal not aborted)', async () => {
    gates.get('order 4').open();
    const response = await post('/orders/4');
    expect(response.status).toBe(201);
    expect(response.body.current).toEqual({ keys: ['order:4'], fence: expect.any(Number), aborted: false });
    expect(response.body.current.fence).toBeGreaterThan(0);
  });

  it.each(['guarded-above', 'guarded-below'])(
    '@UseGuards %s @Locked: the guard still rejects, and no lock is left',
    async (route) => {
      const rejected = await post(`/${route}/1`);
      expect(rejected.status).toBe(403);
      expect(await locked.locks.isLocked(`${route}:1`)).toBe(false);
      expect(await redis.command('KEYS', `*${route}*`)).toEqual([]);

      // The guard lets this one through, and the route is still locked.
      const allowed = await post(`/${route}/1`).set('x-allow', 'yes');
      expect(allowed.status).toBe(201);
      expect(allowed.body.current.keys).toEqual([`${route}:1`]);
    },
  );

  it('a missing template value is a 400 naming the placeholder, and nothing is sent to Redis', async () => {
    await resetStats(redis.url);
    const response = await post('/tenants/acme/orders').set('x-tenant', 'acme').send({});
    expect(response.status).toBe(400);
    expect(response.body.message).toContain('{body.orderId}');
    expect(response.body.message).toContain('undefined');

    expect(await commandsSinceReset()).toEqual([]);
    const keys = (await redis.command('KEYS', '*')) as string[];
    expect(keys.filter((key) => key.includes('undefined'))).toEqual([]);

    // With the value present the same route locks (commands reach Redis) and runs.
    const created = await post('/tenants/acme/orders').set('x-tenant', 'acme').send({ orderId: 'o-9' });
    expect(created.status).toBe(201);
    expect(created.body.created).toBe('o-9');
    expect(await commandsSinceReset()).not.toEqual([]);
  });

  it("a handler's NotFoundException passes through (404), and the next request is 404 again, not 409", async () => {
    const first = await request(locked.server).get('/items/7');
    expect(first.status).toBe(404);
    expect(first.body.message).toBe('no item 7');
    const second = await request(locked.server).get('/items/7');
    expect(second.status).toBe(404);
    expect(await locked.locks.isLocked('item:7')).toBe(false);
  });

  it('a store that does not answer is a 503, and the handler does not run', async () => {
    gates.get('order 5').open();
    redis.pause();
    try {
      const response = await post('/orders/5');
      expect(response.status).toBe(503);
      expect(response.body.message).toMatch(/unavailable/i);
    } finally {
      redis.resume();
    }
    expect(gates.get('order 5').arrivals).toBe(0);
  });

  it('the route is locked once (the interceptor only), so reentrant: false does not lock it against itself', async () => {
    const response = await post('/once/1');
    expect(response.status).toBe(201);
  });

  it('a LockLostError thrown in the handler is a 500 that says the lock is lost', async () => {
    const response = await post('/lost/1');
    expect(response.status).toBe(500);
    // In general terms: the reason (a renewal's error, a host) stays in the server's log.
    expect(response.body).toMatchObject({
      code: 'LOCK_LOST',
      message: 'The lock on "lost:1" was lost while the request ran.',
    });
  });
});
