import { Injectable, Logger, Module, Scope } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { firstValueFrom, filter, toArray } from 'rxjs';
import { Leader, LockModule, LockOptionsError, LockService, type LeaderTerm, type LockEvent } from '../../lib';
import { eventually } from '../support/eventually';
import { quietLogger, trackLockApps } from '../support/lock-app';

/** Whatever `fn` throws synchronously, or undefined. */
function thrown(fn: () => unknown): unknown {
  try {
    fn();
  } catch (error) {
    return error;
  }
  return undefined;
}

async function bootstrapError(providers: Function[]): Promise<unknown> {
  const module = await Test.createTestingModule({ imports: [LockModule.forRoot({})], providers: providers as never[] })
    .setLogger(quietLogger())
    .compile();
  try {
    await module.init();
  } catch (error) {
    return error;
  } finally {
    await module.close().catch(() => undefined);
  }
  return undefined;
}

describe('leader election: bad input and @Leader at bootstrap', () => {
  const apps = trackLockApps();

  it('lead() refuses an empty or non-string name, a non-function fn and bad options, each naming what is wrong', async () => {
    const { locks } = await apps.start({});
    const work = (): void => undefined;
    for (const name of ['', 42, undefined, null, 'tab\there', 'x'.repeat(201)]) {
      const error = thrown(() => locks.lead(name as string, work));
      expect(error).toBeInstanceOf(LockOptionsError);
      expect(error).toMatchObject({ option: 'name' });
    }
    for (const fn of ['run', undefined, {}]) {
      const error = thrown(() => locks.lead('jobs', fn as never));
      expect(error).toBeInstanceOf(LockOptionsError);
      expect(error).toMatchObject({ option: 'fn' });
    }
    expect(thrown(() => locks.lead('jobs', work, { ttl: 1 }))).toMatchObject({ option: 'ttl' });
    expect(thrown(() => locks.lead('jobs', work, { tll: 1000 } as never))).toMatchObject({ option: 'tll' });
    expect(thrown(() => locks.lead('jobs', work, 'fast' as never))).toMatchObject({ option: 'options' });
    for (const name of ['', 7]) {
      await expect(locks.leader(name as string)).rejects.toBeInstanceOf(LockOptionsError);
    }
    // Nothing was started by the refused calls.
    expect(await locks.leader('jobs')).toBeNull();
  });

  it('a failing fn is logged as an error naming the leadership and the term, and the next term begins', async () => {
    const errors = vi.spyOn(Logger.prototype, 'error');
    try {
      const { locks } = await apps.start({});
      const terms: number[] = [];
      const leadership = locks.lead(
        'failing',
        (term) => {
          terms.push(term.term);
          throw new Error('the broker is down');
        },
        { ttl: 100 },
      );
      await eventually(async () => terms.length >= 2, 5_000, 'a second term');
      await leadership.stop();
      const logged = errors.mock.calls.map(([message]) => String(message));
      expect(logged).toContain(`Leader of "failing" (term ${terms[0]}) failed: the broker is down`);
    } finally {
      errors.mockRestore();
    }
  });

  it('@Leader with an empty or non-string name, or a misspelt option, fails as the class loads, naming the method', () => {
    const empty = thrown(() => {
      class Jobs {
        @Leader('')
        run(): void {}
      }
      return Jobs;
    });
    expect(empty).toBeInstanceOf(LockOptionsError);
    expect((empty as LockOptionsError).option).toBe('@Leader name of Jobs.run');
    const numeric = thrown(() => {
      class Jobs {
        @Leader(5 as unknown as string)
        run(): void {}
      }
      return Jobs;
    });
    expect((numeric as LockOptionsError).option).toBe('@Leader name of Jobs.run');
    const misspelt = thrown(() => {
      class Jobs {
        @Leader('jobs', { tll: 5 } as never)
        run(): void {}
      }
      return Jobs;
    });
    expect((misspelt as LockOptionsError).option).toBe('tll of Jobs.run');
  });

  it('@Leader with a malformed option value fails as the class loads, naming the method', () => {
    for (const ttl of [-1, 0, 5, Number.NaN, Infinity, '1000']) {
      const error = thrown(() => {
        class Jobs {
          @Leader('jobs', { ttl: ttl as number })
          run(): void {}
        }
        return Jobs;
      });
      expect(error).toBeInstanceOf(LockOptionsError);
      expect((error as LockOptionsError).option).toBe('ttl of Jobs.run');
    }
  });

  it('a @Leader method runs one term at a time when the application imports LockModule twice', async () => {
    let running = 0;
    let mostAtOnce = 0;
    let calls = 0;
    @Injectable()
    class Auditor {
      @Leader('audit-once', { ttl: 1_000 })
      async audit(term: LeaderTerm): Promise<void> {
        calls++;
        mostAtOnce = Math.max(mostAtOnce, ++running);
        try {
          await new Promise((resolve) => term.signal.addEventListener('abort', resolve, { once: true }));
        } finally {
          running--;
        }
      }
    }
    @Module({ imports: [LockModule.forRoot({})], providers: [Auditor] })
    class Audits {}
    @Module({ imports: [LockModule.forRoot({})] })
    class Elsewhere {}
    const module = await Test.createTestingModule({ imports: [Audits, Elsewhere] })
      .setLogger(quietLogger())
      .compile();
    try {
      await module.init();
      await eventually(async () => calls >= 1, 5_000, 'the @Leader method runs');
      // Both imports' campaigns would start at bootstrap, each on its own in-process store: a second run would
      // begin within a few ms. Waiting well past that shows none did.
      await new Promise((resolve) => setTimeout(resolve, 500));
      expect({ calls, mostAtOnce }).toEqual({ calls: 1, mostAtOnce: 1 });
    } finally {
      await module.close();
    }
  });

  it('a @Leader method of a request-scoped provider fails the bootstrap, naming the method', async () => {
    @Injectable({ scope: Scope.REQUEST })
    class PerRequest {
      @Leader('per-request')
      run(): void {}
    }
    const error = await bootstrapError([PerRequest]);
    expect(error).toBeInstanceOf(LockOptionsError);
    expect((error as LockOptionsError).option).toBe('@Leader');
    expect((error as LockOptionsError).message).toContain('PerRequest.run');
    expect((error as LockOptionsError).message).toContain('request-scoped');
  });

  it('two @Leader methods leading one name in one application fail the bootstrap, naming both', async () => {
    @Injectable()
    class Mailer {
      @Leader('outbox')
      drain(): void {}
    }
    @Injectable()
    class Notifier {
      @Leader('outbox')
      send(): void {}
    }
    const error = await bootstrapError([Mailer, Notifier]);
    expect(error).toBeInstanceOf(LockOptionsError);
    expect((error as LockOptionsError).message).toMatch(/Mailer\.drain|Notifier\.send/);
    expect((error as LockOptionsError).message).toContain('already leads it');
  });

  it('a @Leader method of a singleton runs with its term from bootstrap, and its term ends at shutdown', async () => {
    const terms: LeaderTerm[] = [];
    @Injectable()
    class Broadcaster {
      readonly self = this;
      @Leader('broadcast', { ttl: 1_000 })
      async broadcast(term: LeaderTerm): Promise<void> {
        expect(this.self).toBe(this);
        terms.push(term);
        await new Promise((resolve) => term.signal.addEventListener('abort', resolve, { once: true }));
      }
    }
    const module = await Test.createTestingModule({
      imports: [LockModule.forRoot({ instance: 'boot' })],
      providers: [Broadcaster],
    })
      .setLogger(quietLogger())
      .compile();
    const locks = module.get(LockService);
    const events = firstValueFrom(
      locks.events.pipe(
        filter((event: LockEvent) => event.type === 'elected' || event.type === 'deposed'),
        toArray(),
      ),
    );
    await module.init();
    await eventually(async () => terms.length === 1, 5_000, 'the @Leader method runs');
    expect(terms[0]).toMatchObject({ name: 'broadcast', instance: 'boot' });
    expect(await locks.leader('broadcast')).toMatchObject({ instance: 'boot', term: terms[0].term });
    await module.close();
    expect(terms[0].signal.aborted).toBe(true);
    expect((await events).map((event) => [event.type, (event as { reason?: string }).reason])).toEqual([
      ['elected', undefined],
      ['deposed', 'shutdown'],
    ]);
  });
});
