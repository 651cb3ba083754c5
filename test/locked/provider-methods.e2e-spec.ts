import { Controller, Global, Injectable, Module, Param, Post, Scope, type OnModuleInit } from '@nestjs/common';
import { Cron, ScheduleModule, SchedulerRegistry } from '@nestjs/schedule';
import request from 'supertest';
import { LockOptionsError, LockService, type Lock } from '../../lib';
import { Locked } from '../../lib/decorators';
import { startRedis, type RedisProcess } from '../support/redis-server';
import { eventually, Gates, within } from './helpers/gates';
import { startLockedApp, type LockedApp } from './helpers/locked-app';

const gates = new Gates();

function describeCurrent(lock: Lock | undefined) {
  return lock && { keys: [...lock.keys], fence: lock.fence, aborted: lock.signal.aborted };
}

@Injectable()
class WorkService {
  /** Calls inside `work` right now, per argument, and the most ever seen at once. */
  readonly inside = new Map<string, number>();
  readonly mostInside = new Map<string, number>();

  constructor(private readonly locks: LockService) {}

  @Locked('work:{0}')
  async work(name: string, gate: string) {
    this.inside.set(name, (this.inside.get(name) ?? 0) + 1);
    this.mostInside.set(name, Math.max(this.mostInside.get(name) ?? 0, this.inside.get(name)!));
    try {
      await gates.get(gate).pass();
      return describeCurrent(this.locks.current());
    } finally {
      this.inside.set(name, this.inside.get(name)! - 1);
    }
  }

  @Locked('nested:{0}')
  async outer(id: string) {
    const outerLock = describeCurrent(this.locks.current());
    const innerLock = await this.inner(id);
    return { outerLock, innerLock };
  }

  @Locked('nested:{0}')
  async inner(_id: string) {
    return describeCurrent(this.locks.current());
  }

  @Locked('job:nightly', { onBusy: 'skip', wait: 0 })
  async nightly() {
    await gates.get('nightly').pass();
    return 'ran';
  }

  @Locked(['account:{0.from}', 'account:{0.to}'])
  async transfer(_order: { from: string; to: string }) {
    return describeCurrent(this.locks.current());
  }

  @Locked((source) => `by-function:${String(source.args[0])}`)
  async keyedByFunction(_id: number) {
    return describeCurrent(this.locks.current());
  }

  @Locked('failing:{0}')
  async failing(id: string): Promise<never> {
    throw new RangeError(`failing ${id}`);
  }

  @Locked('sync:{0}')
  synchronous(id: string) {
    return `sync ${id}: ${this.locks.current()?.keys.join()}`;
  }
}

/** @Cron with @Locked in both decorator orders; ScheduleModule (global) initialises before LockModule. */
@Injectable()
class NightlyJobs {
  readonly runs: { job: string; lock: ReturnType<typeof describeCurrent> }[] = [];

  constructor(private readonly locks: LockService) {}

  @Cron('0 0 1 1 *', { name: 'locked-above-cron' })
  @Locked('cron:above', { onBusy: 'skip', wait: 0 })
  async lockedAbove() {
    this.runs.push({ job: 'above', lock: describeCurrent(this.locks.current()) });
  }

  @Locked('cron:below', { onBusy: 'skip', wait: 0 })
  @Cron('0 0 1 1 *', { name: 'locked-below-cron' })
  async lockedBelow() {
    this.runs.push({ job: 'below', lock: describeCurrent(this.locks.current()) });
  }
}

/** A global module initialises before LockModule's explorer: its onModuleInit already gets locked calls. */
@Injectable()
class EarlyCaller implements OnModuleInit {
  result: unknown;
  constructor(private readonly work: WorkService) {}

  async onModuleInit() {
    gates.get('early').open();
    this.result = await this.work.work('early', 'early');
  }
}

@Global()
@Module({ providers: [WorkService, EarlyCaller], exports: [WorkService] })
class EarlyModule {}

@Injectable({ scope: Scope.TRANSIENT })
class TransientWorker {
  constructor(private readonly locks: LockService) {}

  @Locked('transient:{0}')
  async run(_id: string) {
    return describeCurrent(this.locks.current());
  }
}

@Injectable()
class TransientConsumer {
  constructor(readonly worker: TransientWorker) {}
}

@Controller()
class RouteCallsLockedService {
  constructor(private readonly work: WorkService) {}

  /** The route's key differs from the service's: both are locked, each once. */
  @Post('work/:id')
  @Locked('route-work:{params.id}', { wait: 0 })
  async startWork(@Param('id') id: string) {
    gates.get(`route ${id}`).open();
    return this.work.work(id, `route ${id}`);
  }
}

describe('@Locked on provider methods (real Nest app, real Redis)', () => {
  let redis: RedisProcess;
  let locked: LockedApp;
  let work: WorkService;

  beforeAll(async () => {
    redis = await startRedis();
    locked = await startLockedApp(redis.url, {
      imports: [ScheduleModule.forRoot(), EarlyModule],
      providers: [NightlyJobs, TransientWorker, TransientConsumer],
      controllers: [RouteCallsLockedService],
    });
    work = locked.app.get(WorkService);
  });
  afterAll(async () => {
    gates.openAll();
    await locked?.close();
    await redis?.stop();
  });

  it('concurrent calls with the same argument never overlap; different arguments overlap', async () => {
    const first = work.work('x', 'x first');
    await gates.get('x first').reached();
    const second = work.work('x', 'x second');
    const other = work.work('y', 'y');
    // 'y' gets inside while the first 'x' is still inside: different keys run in parallel. The second 'x'
    // asked for its lock before 'y' did, and still is not inside: the same key waits.
    await within(gates.get('y').reached(), 5000, "'y' getting inside");
    expect(work.inside.get('x')).toBe(1);
    expect(gates.get('x second').arrivals).toBe(0);
    expect(work.inside.get('y')).toBe(1);

    gates.get('y').open();
    gates.get('x first').open();
    gates.get('x second').open();
    const [firstLock, secondLock] = await Promise.all([first, second, other]);
    expect(work.mostInside.get('x')).toBe(1);
    expect(gates.get('x second').arrivals).toBe(1);
    // The second holder got a newer fencing token.
    expect(secondLock!.fence).toBeGreaterThan(firstLock!.fence);
  });

  it('inside the method LockService.current() is the held lock (fence > 0, signal not aborted)', async () => {
    gates.get('current').open();
    const lock = await work.work('current', 'current');
    expect(lock).toEqual({ keys: ['work:current'], fence: expect.any(Number), aborted: false });
    expect(lock!.fence).toBeGreaterThan(0);
    expect(await locked.locks.isLocked('work:current')).toBe(false);
  });

  it('a nested call on the same key (outer -> inner of the same service) completes, under the same lease', async () => {
    const { outerLock, innerLock } = await within(work.outer('n1'), 2000, 'outer -> inner');
    expect(outerLock!.keys).toEqual(['nested:n1']);
    expect(innerLock).toEqual(outerLock);
    expect(await locked.locks.isLocked('nested:n1')).toBe(false);
  });

  it("onBusy 'skip': of two concurrent calls one runs and one resolves undefined", async () => {
    const first = work.nightly();
    await gates.get('nightly').reached();
    const second = await within(work.nightly(), 5000, 'the skipped call');
    expect(second).toBeUndefined();
    expect(gates.get('nightly').arrivals).toBe(1);
    gates.get('nightly').open();
    expect(await first).toBe('ran');
  });

  it('locks an array of keys, or the keys a key function returns', async () => {
    expect((await work.transfer({ from: 'A', to: 'B' }))!.keys).toEqual(['account:A', 'account:B']);
    expect((await work.keyedByFunction(7))!.keys).toEqual(['by-function:7']);
  });

  it("the method's own error passes through unchanged and the lock is released", async () => {
    await expect(work.failing('f1')).rejects.toThrow(new RangeError('failing f1'));
    expect(await locked.locks.isLocked('failing:f1')).toBe(false);
  });

  it('a synchronous method runs locked too (and returns a Promise)', async () => {
    const result = work.synchronous('s1');
    expect(result).toBeInstanceOf(Promise);
    // eslint-disable-next-line @typescript-eslint/await-thenable -- typed synchronous, a Promise once @Locked
    expect(await result).toBe('sync s1: sync:s1');
  });

  it('a missing argument is an InvalidLockKeyError naming the placeholder, and the method does not run', async () => {
    const inside = work.inside.get('undefined');
    const attempt = within(work.work(undefined as unknown as string, 'never'), 5000, 'the refused call');
    await expect(attempt).rejects.toThrow(/\{0\} is undefined/);
    expect(gates.get('never').arrivals).toBe(0);
    expect(work.inside.get('undefined')).toBe(inside);
  });

  it('@Cron jobs run locked in either decorator order, though ScheduleModule captured them first', async () => {
    const jobs = locked.app.get(NightlyJobs);
    const registry = locked.app.get(SchedulerRegistry);
    await registry.getCronJob('locked-above-cron').fireOnTick();
    await registry.getCronJob('locked-below-cron').fireOnTick();
    await eventually(async () => jobs.runs.length === 2, 2000, 'both cron jobs ran');
    expect(jobs.runs).toEqual([
      { job: 'above', lock: { keys: ['cron:above'], fence: expect.any(Number), aborted: false } },
      { job: 'below', lock: { keys: ['cron:below'], fence: expect.any(Number), aborted: false } },
    ]);
  });

  it("a call from another module's onModuleInit, before LockModule's explorer ran, is locked", async () => {
    expect(locked.app.get(EarlyCaller).result).toEqual({
      keys: ['work:early'],
      fence: expect.any(Number),
      aborted: false,
    });
  });

  it('transient providers are locked', async () => {
    const lock = await locked.app.get(TransientConsumer).worker.run('t1');
    expect(lock).toEqual({ keys: ['transient:t1'], fence: expect.any(Number), aborted: false });
  });

  it('a route handler calling a @Locked service: the route and the service are each locked by their own key', async () => {
    const nested = await request(locked.server).post('/work/r1');
    expect(nested.status).toBe(201);
    expect(nested.body.keys).toEqual(['work:r1']);
  });

  it('an instance Nest did not create is refused, not run unlocked', async () => {
    const stray = new WorkService(locked.locks);
    await expect(within(stray.work('stray', 'stray'), 5000, 'the refused call')).rejects.toThrow(LockOptionsError);
    expect(gates.get('stray').arrivals).toBe(0);
  });
});

describe('@Locked checks at bootstrap', () => {
  let redis: RedisProcess;
  beforeAll(async () => {
    redis = await startRedis();
  });
  afterAll(async () => {
    await redis?.stop();
  });

  it('refuses a @Locked method on a request-scoped provider, naming it', async () => {
    @Injectable({ scope: Scope.REQUEST })
    class PerRequestService {
      @Locked('per-request:{0}')
      async run(_id: string) {
        return 'ran';
      }
    }
    await expect(startLockedApp(redis.url, { providers: [PerRequestService] })).rejects.toThrow(
      /PerRequestService\.run.*request-scoped/,
    );
  });

  it('an option judged against the module or another option (minHold above maxHold, limit with mode) names the method', async () => {
    @Injectable()
    class HoldService {
      @Locked('job:hold', { minHold: 5_000, maxHold: 1_000 })
      async run() {
        return 'ran';
      }
    }
    await expect(startLockedApp(redis.url, { providers: [HoldService] })).rejects.toThrow(
      /^Invalid lock option 'minHold of HoldService\.run': 5000\. Expected at most maxHold/,
    );
    @Injectable()
    class MixService {
      @Locked('job:mix', { limit: 2, mode: 'read' })
      async run() {
        return 'ran';
      }
    }
    const failure = startLockedApp(redis.url, { providers: [MixService] });
    await expect(failure).rejects.toThrow(LockOptionsError);
    await expect(failure).rejects.toMatchObject({ option: expect.stringMatching(/ of MixService\.run$/) });
  });

  it('refuses request placeholders on a provider method', async () => {
    @Injectable()
    class MisusedService {
      @Locked('order:{params.id}')
      async run() {
        return 'ran';
      }
    }
    const failure = startLockedApp(redis.url, { providers: [MisusedService] });
    await expect(failure).rejects.toThrow(LockOptionsError);
    await expect(failure).rejects.toThrow(/MisusedService\.run.*argument placeholders/);
    // The template quoted once (before: "\"order:{params.id}\"").
    await expect(failure).rejects.toThrow(`'@Locked key of MisusedService.run': "order:{params.id}".`);
  });

  it('refuses argument placeholders on a route handler', async () => {
    @Controller()
    class MisusedController {
      @Post('misused/:id')
      @Locked('order:{0}')
      run() {
        return 'ran';
      }
    }
    await expect(startLockedApp(redis.url, { controllers: [MisusedController] })).rejects.toThrow(
      /MisusedController\.run.*request placeholders/,
    );
  });

  it('refuses invalid acquire options', async () => {
    @Injectable()
    class BadOptionsService {
      @Locked('bad-options', { ttl: -5 })
      async run() {
        return 'ran';
      }
    }
    await expect(startLockedApp(redis.url, { providers: [BadOptionsService] })).rejects.toThrow(
      /'ttl of BadOptionsService\.run': -5/,
    );
  });
});
