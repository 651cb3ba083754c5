import { ConsoleLogger, Controller, Injectable, Param, Post, type INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { setTimeout as sleep } from 'node:timers/promises';
import request from 'supertest';
import type { App } from 'supertest/types';
import {
  InvalidLockKeyError,
  LockHealthIndicator,
  LockLostError,
  LockModule,
  LockNotAcquiredError,
  LockOptionsError,
  LockService,
  LockTesting,
  LockUnavailableError,
  Locked,
  type HeldElsewhere,
  type Lock,
  type LockEvent,
  type LockModuleOptions,
} from '../../lib';
import { Gates } from '../locked/helpers/gates';
import { createLockApp, uniqueKey } from '../support/lock-app';
import { startRedis, type RedisProcess } from '../support/redis-server';
import { abortedAt, rejectionOf, within } from './helpers/timing';

/** The application's own instance name: holders elsewhere never carry it. */
const OWN_INSTANCE = 'pod-a';
const gates = new Gates();

/** A provider's @Locked methods: a report rebuilt on demand, a nightly job, and a long job that reads its signal. */
@Injectable()
class ReportJobs {
  runs = 0;

  constructor(private readonly locks: LockService) {}

  @Locked('report:{0}', { wait: 0 })
  async rebuild(id: string): Promise<string> {
    this.runs++;
    return `rebuilt ${id}`;
  }

  @Locked('job:{0}', { wait: 0, onBusy: 'skip' })
  async nightly(name: string): Promise<string> {
    this.runs++;
    return `ran ${name}`;
  }

  /** Works until the test opens its gate, then says what its lock's signal said. */
  @Locked('long:{0}')
  async long(name: string): Promise<{ aborted: boolean; reason: unknown }> {
    const lock = this.locks.current() as Lock;
    await gates.get(`long ${name}`).pass();
    return { aborted: lock.signal.aborted, reason: lock.signal.reason };
  }
}

@Controller('orders')
class OrdersController {
  constructor(private readonly locks: LockService) {}

  @Post(':id/pay')
  @Locked('order:{params.id}', { wait: 0 })
  pay(@Param('id') id: string): { paid: string } {
    return { paid: id };
  }

  /** Stops, as a handler should, when its lock was lost while it worked: LockLostError, answered 500. */
  @Post(':id/ship')
  @Locked('order:{params.id}', { wait: 0 })
  async ship(@Param('id') id: string): Promise<{ shipped: string }> {
    const lock = this.locks.current() as Lock;
    await gates.get(`ship ${id}`).pass();
    lock.signal.throwIfAborted();
    return { shipped: id };
  }
}

/** Busy, lost and unavailable locks are logged at debug, warn and error: the test output shows none of them. */
function silentLogger(): ConsoleLogger {
  return new ConsoleLogger({ logLevels: ['fatal'] });
}

/** The application under test: LockModule without Redis, a controller and a provider with @Locked methods. */
async function startApp(options: LockModuleOptions = {}): Promise<INestApplication> {
  const moduleRef = await Test.createTestingModule({
    imports: [LockModule.forRoot({ instance: OWN_INSTANCE, ...options })],
    controllers: [OrdersController],
    providers: [ReportJobs],
  })
    .setLogger(silentLogger())
    .compile();
  const app = moduleRef.createNestApplication({ logger: silentLogger() });
  await app.init();
  return app;
}

/** Every event `locks` emits from now on, until `stop()`. */
function recordEvents(locks: LockService): { events: LockEvent[]; stop(): void } {
  const events: LockEvent[] = [];
  const subscription = locks.events.subscribe((event) => events.push(event));
  return { events, stop: () => subscription.unsubscribe() };
}

/** 'settled' if `promise` has settled by the next macrotask, else 'pending'. */
async function stateOf(promise: Promise<unknown>): Promise<'settled' | 'pending'> {
  const settled = promise.then(
    () => 'settled' as const,
    () => 'settled' as const,
  );
  return Promise.race([settled, sleep(0).then(() => 'pending' as const)]);
}

describe('LockTesting: lock conditions of a Redis deployment, on the in-process store', () => {
  let app: INestApplication;
  let locks: LockService;
  let testing: LockTesting;
  let http: () => ReturnType<typeof request>;

  beforeAll(async () => {
    app = await startApp();
    locks = app.get(LockService);
    testing = LockTesting.from(app);
    http = () => request(app.getHttpServer() as App);
  });

  afterAll(async () => {
    gates.openAll();
    await app?.close();
  });

  it("is the module's provider: moduleRef.get(LockTesting) and LockTesting.from(app) give the same one", () => {
    expect(app.get(LockTesting)).toBe(testing);
  });

  describe('holdElsewhere: a key busy as if another instance held it', () => {
    it('LockService: acquire throws LockNotAcquiredError after its wait, tryAcquire answers null, inspect names the other instance', async () => {
      const key = uniqueKey('held');
      const recorder = recordEvents(locks);
      const held = await testing.holdElsewhere(key, { instance: 'pod-b' });
      try {
        const busy = await rejectionOf(locks.acquire(key, { wait: 100 }));
        expect(busy).toBeInstanceOf(LockNotAcquiredError);
        expect((busy as LockNotAcquiredError).retryAfterMs).toBeGreaterThan(0);
        expect(await locks.tryAcquire(key)).toBeNull();
        expect(await locks.isLocked(key)).toBe(true);
        const info = await locks.inspect(key);
        // No token: a holder of another instance.
        expect(info).toEqual({
          key,
          kind: 'mutex',
          holders: [{ instance: 'pod-b', ttlLeft: expect.any(Number), fence: held.fence }],
        });
        expect(info?.holders[0].ttlLeft).toBeGreaterThan(0);
        expect(info?.holders[0].ttlLeft).toBeLessThanOrEqual(10_000);
        expect(recorder.events.filter((event) => event.type === 'busy').map((event) => event.keys)).toEqual([
          [key],
          [key],
        ]);
      } finally {
        recorder.stop();
      }
      expect(await held.release()).toBe(true);
      const lock = await locks.acquire(key, { wait: 0 });
      expect(lock.fence).toBeGreaterThan(held.fence);
      await lock.release();
      expect(await held.release()).toBe(false);
    });

    it('a caller waiting for the key is woken when the test releases it, not when a lease would end', async () => {
      const key = uniqueKey('woken');
      // Renewed with the module's ttl (10 s): only the release can let the waiter in within the second.
      const held = await testing.holdElsewhere(key);
      const waiting = locks.acquire(key, { wait: 8_000 });
      await sleep(100);
      expect(await stateOf(waiting)).toBe('pending');
      const releasedAt = performance.now();
      expect(await held.release()).toBe(true);
      const lock = await within(waiting, 1_000, 'the waiting acquire');
      expect(performance.now() - releasedAt).toBeLessThan(500);
      expect((await locks.inspect(key))?.holders).toEqual([
        expect.objectContaining({ instance: OWN_INSTANCE, token: lock.token }),
      ]);
      await lock.release();
    });

    it("held until released: its lease is renewed past its ttl, like a live holder's", async () => {
      const short = await startApp({ ttl: 200 });
      try {
        const shortLocks = short.get(LockService);
        const key = uniqueKey('renewed');
        const held = await LockTesting.from(short).holdElsewhere(key);
        await sleep(700);
        expect(await shortLocks.tryAcquire(key)).toBeNull();
        expect((await shortLocks.inspect(key))?.holders[0].ttlLeft).toBeLessThanOrEqual(200);
        expect(await held.release()).toBe(true);
        expect(await shortLocks.isLocked(key)).toBe(false);
      } finally {
        await short.close();
      }
    });

    it('with a ttl: busy for that long, then free without a release, like the lease of an instance that crashed', async () => {
      const key = uniqueKey('crashed');
      const heldAt = performance.now();
      const held = await testing.holdElsewhere(key, { ttl: 300 });
      expect(await locks.tryAcquire(key)).toBeNull();
      const lock = await within(locks.acquire(key, { wait: 3_000 }), 2_000, 'the acquire behind an expiring lease');
      expect(performance.now() - heldAt).toBeGreaterThanOrEqual(290);
      await lock.release();
      expect(await held.release()).toBe(false);
    });

    it('several keys all-or-none; semaphore permits and readers', async () => {
      const [a, b] = [uniqueKey('pair'), uniqueKey('pair')];
      const pair = await testing.holdElsewhere([a, b]);
      expect(pair.keys).toEqual([a, b]);
      expect(Object.keys(pair.fences)).toEqual([a, b]);
      expect(await locks.tryAcquire([b, uniqueKey('free')])).toBeNull();
      await pair.release();

      const pool = uniqueKey('pool');
      const permits = [
        await testing.holdElsewhere(pool, { limit: 2 }),
        await testing.holdElsewhere(pool, { limit: 2 }),
      ];
      expect(await locks.tryAcquire(pool, { limit: 2 })).toBeNull();
      expect((await locks.inspect(pool))?.kind).toBe('semaphore');
      const waiting = locks.acquire(pool, { limit: 2, wait: 5_000 });
      await sleep(50);
      await permits[0].release();
      const permit = await within(waiting, 1_000, 'the permit waiter');
      await permit.release();
      await permits[1].release();

      const document = uniqueKey('document');
      const reader = await testing.holdElsewhere(document, { mode: 'read' });
      const ownReader = await locks.tryAcquire(document, { mode: 'read' });
      expect(ownReader).not.toBeNull();
      await ownReader?.release();
      expect(await locks.tryAcquire(document)).toBeNull();
      await reader.release();
    });

    it('`await using` releases it at the end of the block', async () => {
      const key = uniqueKey('disposed');
      {
        await using held = await testing.holdElsewhere(key);
        expect(held.instance).toBe('another-instance');
        expect(await locks.isLocked(key)).toBe(true);
      }
      expect(await locks.isLocked(key)).toBe(false);
    });

    it("refuses a key already held, the application's own instance name, and bad options", async () => {
      const key = uniqueKey('refused');
      const lock = await locks.acquire(key);
      await expect(testing.holdElsewhere(key)).rejects.toThrow(/held now .*release it first/);
      await lock.release();
      const held = await testing.holdElsewhere(key);
      await expect(testing.holdElsewhere(key)).rejects.toBeInstanceOf(LockOptionsError);
      await held.release();
      await expect(testing.holdElsewhere(key, { instance: OWN_INSTANCE })).rejects.toThrow(/another instance's name/);
      await expect(testing.holdElsewhere(key, { ttl: 1 })).rejects.toThrow(/Invalid lock option 'ttl'/);
      await expect(testing.holdElsewhere(key, { wait: 0 } as never)).rejects.toThrow(
        /one of the options: ttl, instance, limit, mode/,
      );
      await expect(testing.holdElsewhere([key, uniqueKey('second')], { limit: 2 })).rejects.toThrow(/one key per call/);
      await expect(testing.holdElsewhere('')).rejects.toBeInstanceOf(InvalidLockKeyError);
      expect(await locks.isLocked(key)).toBe(false);
    });

    it('@Locked provider method: onBusy throw rejects with LockNotAcquiredError, onBusy skip does not run it', async () => {
      const jobs = app.get(ReportJobs);
      const [report, job] = [uniqueKey('r'), uniqueKey('nightly')];
      const held = [await testing.holdElsewhere(`report:${report}`), await testing.holdElsewhere(`job:${job}`)];
      const runsBefore = jobs.runs;
      await expect(jobs.rebuild(report)).rejects.toBeInstanceOf(LockNotAcquiredError);
      await expect(jobs.nightly(job)).resolves.toBeUndefined();
      expect(jobs.runs).toBe(runsBefore);
      await Promise.all(held.map((hold) => hold.release()));
      await expect(jobs.rebuild(report)).resolves.toBe(`rebuilt ${report}`);
      await expect(jobs.nightly(job)).resolves.toBe(`ran ${job}`);
    });

    it('@Locked route: 409 with Retry-After while the key is held elsewhere, 201 once it is released', async () => {
      const id = uniqueKey('order');
      const held = await testing.holdElsewhere(`order:${id}`);
      const busy = await http().post(`/orders/${id}/pay`).expect(409);
      expect(busy.body).toMatchObject({ statusCode: 409, code: 'LOCK_BUSY', keys: [`order:${id}`] });
      expect(Number(busy.headers['retry-after'])).toBeGreaterThanOrEqual(1);
      await held.release();
      await http().post(`/orders/${id}/pay`).expect(201, { paid: id });
    });
  });

  describe('loseHeld: a lock held by the application lost mid-callback', () => {
    it('withLock: the signal aborts with LockLostError, extend() throws it, `lost` is emitted, release() is false; a waiter gets in', async () => {
      const key = uniqueKey('lost');
      const gate = gates.get(key);
      const recorder = recordEvents(locks);
      let held: Lock | undefined;
      const work = locks.withLock(key, async (lock) => {
        held = lock;
        await gate.pass();
        return { aborted: lock.signal.aborted, reason: lock.signal.reason as unknown };
      });
      await gate.reached();
      const lock = held as Lock;
      // Outside the callback's async context: another caller, not a reentrant one.
      const waiter = locks.acquire(key, { wait: 5_000 });
      await sleep(20);

      await testing.loseHeld(key);

      expect(lock.signal.aborted).toBe(true);
      expect(lock.signal.reason).toBeInstanceOf(LockLostError);
      expect(String((lock.signal.reason as Error).message)).toMatch(/the lease was gone when renewing it/);
      await expect(lock.extend()).rejects.toBeInstanceOf(LockLostError);
      expect(recorder.events).toContainEqual(
        expect.objectContaining({ type: 'lost', keys: [key], instance: OWN_INSTANCE }),
      );
      recorder.stop();
      const next = await within(waiter, 1_000, 'the waiter after the loss');
      gate.open();
      expect(await work).toEqual({ aborted: true, reason: expect.any(LockLostError) });
      expect(await lock.release()).toBe(false);
      // The lost lock's release deleted nothing of the new holder's.
      expect((await locks.inspect(key))?.holders).toEqual([expect.objectContaining({ token: next.token })]);
      expect(await next.release()).toBe(true);
    });

    it('a lock on several keys is lost when one of them is; its release frees the others', async () => {
      const [a, b] = [uniqueKey('a'), uniqueKey('b')];
      const lock = await locks.acquire([a, b]);
      await testing.loseHeld(b);
      expect(lock.signal.reason).toBeInstanceOf(LockLostError);
      expect(await locks.isLocked(b)).toBe(false);
      expect(await lock.release()).toBe(false);
      await sleep(10);
      expect(await locks.isLocked(a)).toBe(false);
    });

    it('@Locked provider method: LockService.current().signal aborts while it runs', async () => {
      const name = uniqueKey('job');
      const running = app.get(ReportJobs).long(name);
      await gates.get(`long ${name}`).reached();
      await testing.loseHeld(`long:${name}`);
      gates.get(`long ${name}`).open();
      expect(await running).toEqual({ aborted: true, reason: expect.any(LockLostError) });
    });

    it('@Locked route that checks its signal: 500 (LockLostError) when its lock is lost mid-handler', async () => {
      const id = uniqueKey('ship');
      const response = http()
        .post(`/orders/${id}/ship`)
        .then((answer) => answer);
      await gates.get(`ship ${id}`).reached();
      await testing.loseHeld(`order:${id}`);
      gates.get(`ship ${id}`).open();
      const answer = await response;
      expect(answer.status).toBe(500);
      expect(answer.body).toMatchObject({ code: 'LOCK_LOST' });
      // Lost, it was deleted from the store at once: the next request gets the key.
      await http().post(`/orders/${id}/pay`).expect(201);
    });

    it('refuses a key the application holds no lock on', async () => {
      await expect(testing.loseHeld(uniqueKey('free'))).rejects.toThrow(/a key the application holds a lock on/);
      const key = uniqueKey('elsewhere');
      const held = await testing.holdElsewhere(key);
      await expect(testing.loseHeld(key)).rejects.toBeInstanceOf(LockOptionsError);
      await held.release();
      await expect(testing.loseHeld(42 as never)).rejects.toBeInstanceOf(InvalidLockKeyError);
    });
  });

  describe('makeUnavailable: the store down, then back', () => {
    it('every LockService call rejects with LockUnavailableError, `unavailable` is emitted, health is down; makeAvailable restores them', async () => {
      const key = uniqueKey('down');
      const recorder = recordEvents(locks);
      let ran = false;
      testing.makeUnavailable();
      try {
        const calls: [string, () => Promise<unknown>][] = [
          ['acquire', () => locks.acquire(key)],
          ['tryAcquire', () => locks.tryAcquire(key)],
          ['withLock', () => locks.withLock(key, () => (ran = true))],
          ['isLocked', () => locks.isLocked(key)],
          ['inspect', () => locks.inspect(key)],
          ['forceRelease', () => locks.forceRelease(key)],
        ];
        for (const [method, call] of calls) {
          const error = await rejectionOf(call());
          expect([method, error]).toEqual([method, expect.any(LockUnavailableError)]);
          expect((error as Error).message).toMatch(/made unavailable by LockTesting\.makeUnavailable\(\)/);
        }
        expect(ran).toBe(false);
        expect(recorder.events.filter((event) => event.type === 'unavailable')).toHaveLength(3);
        expect(await app.get(LockHealthIndicator).isHealthy('locks')).toEqual({
          locks: {
            status: 'down',
            store: 'memory',
            message: expect.stringMatching(/^Lock store unavailable: made unavailable/),
          },
        });
      } finally {
        testing.makeAvailable();
        recorder.stop();
      }
      expect(await app.get(LockHealthIndicator).isHealthy('locks')).toEqual({
        locks: { status: 'up', store: 'memory' },
      });
      await expect(locks.withLock(key, () => 'ran')).resolves.toBe('ran');
    });

    it('a lock held when the store goes down: extend() rejects, renewals fail, and it is lost when its validity ends', async () => {
      const short = await startApp({ ttl: 300 });
      const shortLocks = short.get(LockService);
      const shortTesting = LockTesting.from(short);
      try {
        const key = uniqueKey('held-at-outage');
        const lock = await shortLocks.acquire(key);
        const grantedAt = performance.now();
        const lost = abortedAt(lock.signal);
        shortTesting.makeUnavailable();
        await expect(lock.extend()).rejects.toBeInstanceOf(LockUnavailableError);
        expect(lock.signal.aborted).toBe(false);
        const lostAt = await within(lost, 2_000, "the held lock's loss");
        // Its last renewal (or grant) was at most ttl/3 before the outage: lost between 2/3 ttl and ttl after the grant.
        expect(lostAt - grantedAt).toBeGreaterThanOrEqual(190);
        expect(lock.signal.reason).toBeInstanceOf(LockLostError);
        expect((lock.signal.reason as Error).message).toMatch(/not renewed before its validity ended/);
        expect(await lock.release()).toBe(false);
        shortTesting.makeAvailable();
        // Its lease ran out in the store meanwhile, as in Redis: the key is free.
        expect(await shortLocks.isLocked(key)).toBe(false);
      } finally {
        shortTesting.makeAvailable();
        await short.close();
      }
    });

    it('@Locked route answers 503; a @Locked provider method rejects with LockUnavailableError, onBusy skip too', async () => {
      const id = uniqueKey('unavailable');
      const jobs = app.get(ReportJobs);
      testing.makeUnavailable();
      try {
        const answer = await http().post(`/orders/${id}/pay`).expect(503);
        expect(answer.body).toMatchObject({ code: 'LOCK_UNAVAILABLE' });
        await expect(jobs.rebuild(id)).rejects.toBeInstanceOf(LockUnavailableError);
        // Not skipped: a store that does not answer is not a key that someone else holds.
        await expect(jobs.nightly(id)).rejects.toBeInstanceOf(LockUnavailableError);
      } finally {
        testing.makeAvailable();
      }
      await http().post(`/orders/${id}/pay`).expect(201);
    });

    it('keys held elsewhere stand for other instances: their connection is not cut', async () => {
      const [before, during] = [uniqueKey('before'), uniqueKey('during')];
      const heldBefore = await testing.holdElsewhere(before);
      testing.makeUnavailable();
      let heldDuring: HeldElsewhere | undefined;
      try {
        heldDuring = await testing.holdElsewhere(during);
        await expect(testing.loseHeld(before)).rejects.toThrow(/while the store is available/);
        expect(await heldBefore.release()).toBe(true);
      } finally {
        testing.makeAvailable();
      }
      expect(await locks.isLocked(before)).toBe(false);
      expect(await locks.tryAcquire(during)).toBeNull();
      expect(await heldDuring?.release()).toBe(true);
    });
  });
});

describe('LockTesting refuses an application whose LockModule is configured with Redis', () => {
  let redis: RedisProcess;

  beforeAll(async () => {
    redis = await startRedis();
  });

  afterAll(async () => {
    await redis?.stop();
  });

  it.each([
    ['redis', (url: string): LockModuleOptions => ({ redis: url })],
    ['nodes', (url: string): LockModuleOptions => ({ nodes: [url] })],
  ])(
    'with `%s`: LockTesting.from and every method throw a LockOptionsError saying to configure the test without it',
    async (option, options) => {
      await redis.command('FLUSHALL');
      const redisApp = await createLockApp(options(redis.url));
      try {
        const refusal = (() => {
          try {
            LockTesting.from(redisApp.module);
          } catch (error) {
            return error;
          }
          return undefined;
        })();
        expect(refusal).toBeInstanceOf(LockOptionsError);
        expect((refusal as Error).message).toMatch(new RegExp(`^Invalid lock option '${option}': `));
        expect((refusal as Error).message).toMatch(/LockModule\.forRoot\(\) with no 'redis' or 'nodes'/);

        const testing = redisApp.module.get(LockTesting);
        await expect(testing.holdElsewhere('k')).rejects.toThrow(/\(holdElsewhere\)/);
        await expect(testing.loseHeld('k')).rejects.toBeInstanceOf(LockOptionsError);
        expect(() => testing.makeUnavailable()).toThrow(LockOptionsError);
        expect(() => testing.makeAvailable()).toThrow(LockOptionsError);
        // Nothing reached Redis, and the application's locks work as before.
        expect(await redis.command('DBSIZE')).toBe(0);
        await expect(redisApp.locks.withLock(uniqueKey('still-works'), () => 'ran')).resolves.toBe('ran');
      } finally {
        await redisApp.close();
      }
    },
  );

  it('LockTesting.from refuses an application without LockModule', async () => {
    const bare = await Test.createTestingModule({}).compile();
    expect(() => LockTesting.from(bare)).toThrow(/an application or testing module that imports LockModule/);
    await bare.close();
  });
});
