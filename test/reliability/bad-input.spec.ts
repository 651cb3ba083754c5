import { ConsoleLogger, Controller, Get, Injectable, type INestApplication, type Type } from '@nestjs/common';
import { SchedulerRegistry } from '@nestjs/schedule';
import { Test } from '@nestjs/testing';
import request from 'supertest';
import type { App } from 'supertest/types';
import {
  InvalidLockKeyError,
  Locked,
  LockError,
  LockLostError,
  LockModule,
  LockNotAcquiredError,
  LockOptionsError,
  LockService,
  LockUnavailableError,
  MAX_KEY_LENGTH,
  type LockModuleOptions,
  type LockedKey,
  type LockedOptions,
} from '../../lib';
import { AppModule } from '../../sample-app/src/app.module';
import { INTEREST_CRON_JOB } from '../../sample-app/src/interest/interest.job';
import { createLockApp, trackLockApps, uniqueKey } from '../support/lock-app';
import { startRedis, type RedisProcess } from '../support/redis-server';
import { clientList } from './support/redis-clients';
import { RedisSnapshot } from './support/redis-snapshot';
import { rejectionOf } from './support/timing';

type ErrorClass = abstract new (...args: never[]) => Error;

/**
 * Bad input, table by table: each row gets its typed error (the class is asserted) and leaves nothing
 * behind in Redis (no new key except fence counters, foreign keys untouched) nor an open connection.
 */
describe('bad input', () => {
  let server: RedisProcess;
  let snapshot: RedisSnapshot;
  const apps = trackLockApps();

  beforeAll(async () => {
    server = await startRedis();
    snapshot = new RedisSnapshot(server);
  });
  afterAll(() => server?.stop());

  /** Every row: `run` rejects with `expected`, and Redis is left as it was but for fence counters. */
  async function expectRefused(run: () => Promise<unknown>, expected: ErrorClass, option?: string): Promise<LockError> {
    const before = await snapshot.take();
    const { error } = await rejectionOf(run());
    expect(error).toBeInstanceOf(expected);
    expect(error).toBeInstanceOf(LockError);
    if (option !== undefined) expect((error as LockOptionsError).option).toBe(option);
    expect(await snapshot.changesSince(before)).toEqual([]);
    return error as LockError;
  }

  describe('module options: the bootstrap fails with a LockOptionsError naming the option, and opens no connection', () => {
    const rows: [string, () => LockModuleOptions, string][] = [
      ['ttl 0', () => ({ redis: server.url, ttl: 0 }), 'ttl'],
      ['ttl -1', () => ({ redis: server.url, ttl: -1 }), 'ttl'],
      ['ttl NaN', () => ({ redis: server.url, ttl: NaN }), 'ttl'],
      ['ttl Infinity', () => ({ redis: server.url, ttl: Infinity }), 'ttl'],
      ['ttl as a string', () => ({ redis: server.url, ttl: '1000' as unknown as number }), 'ttl'],
      ['wait -1', () => ({ redis: server.url, wait: -1 }), 'wait'],
      ['wait as a string', () => ({ redis: server.url, wait: '5' as unknown as number }), 'wait'],
      ['autoExtend "yes"', () => ({ redis: server.url, autoExtend: 'yes' as unknown as boolean }), 'autoExtend'],
      ['maxHold 0', () => ({ redis: server.url, maxHold: 0 }), 'maxHold'],
      ['driftFactor 0.5', () => ({ redis: server.url, driftFactor: 0.5 }), 'driftFactor'],
      ['driftFactor -0.1', () => ({ redis: server.url, driftFactor: -0.1 }), 'driftFactor'],
      ['reentrant 1', () => ({ redis: server.url, reentrant: 1 as unknown as boolean }), 'reentrant'],
      ['keyPrefix 42', () => ({ redis: server.url, keyPrefix: 42 as unknown as string }), 'keyPrefix'],
      ['commandTimeout 0', () => ({ redis: server.url, commandTimeout: 0 }), 'commandTimeout'],
      ['redis as an http:// URL', () => ({ redis: `http://127.0.0.1:${server.port}` }), 'redis'],
      ['redis as a number', () => ({ redis: 6379 as unknown as string }), 'redis'],
      ['redis as an empty object', () => ({ redis: {} }), 'redis'],
      ['redis port 70000', () => ({ redis: { host: '127.0.0.1', port: 70000 } }), 'redis.port'],
      [
        'redis host as a number',
        () => ({ redis: { host: 127 as unknown as string, port: server.port } }),
        'redis.host',
      ],
      ['nodes empty', () => ({ nodes: [] }), 'nodes'],
      ['nodes as a string', () => ({ nodes: server.url as unknown as string[] }), 'nodes'],
      ['nodes with an ftp:// URL', () => ({ nodes: [server.url, 'ftp://127.0.0.1:1'] }), 'nodes[1]'],
      ['redis and nodes together', () => ({ redis: server.url, nodes: [server.url] }), 'nodes'],
    ];

    it.each(rows)('%s', async (_case, options, option) => {
      const connections = (await clientList(server)).length;
      await expectRefused(() => bootstrap(options()), LockOptionsError, option);
      expect((await clientList(server)).length).toBe(connections);
    });

    // Each of these silently gives the in-process store today (one warning at startup), which excludes
    // nothing across processes: a deployment that believes it is locked on Redis is not. They pass once
    // LockModule.forRoot refuses a non-object and resolveLockOptions refuses option names it does not know.
    it.each<[string, () => LockModuleOptions, string]>([
      ['the Redis URL passed as the options object', () => server.url as unknown as LockModuleOptions, 'options'],
      ['"url" instead of "redis"', () => ({ url: server.url }) as LockModuleOptions, 'url'],
      ['a misspelt option ("ttL")', () => ({ redis: server.url, ttL: 1_000 }) as LockModuleOptions, 'ttL'],
    ])('%s', async (_case, options, option) => {
      await expectRefused(() => bootstrap(options()), LockOptionsError, option);
    });

    it("a bad value from forRootAsync's factory fails the bootstrap the same way", async () => {
      const connections = (await clientList(server)).length;
      const compile = (): Promise<unknown> =>
        Test.createTestingModule({
          imports: [LockModule.forRootAsync({ useFactory: async () => ({ redis: server.url, ttl: -5 }) })],
        })
          .setLogger(quietLogger())
          .compile();
      await expectRefused(compile, LockOptionsError, 'ttl');
      expect((await clientList(server)).length).toBe(connections);
    });
  });

  describe('per-call options: a LockOptionsError at the call, nothing locked, the callback never run', () => {
    type Call = (locks: LockService, key: string, ran: () => void) => Promise<unknown>;
    const rows: [string, Call, string][] = [
      ['acquire ttl 0', (locks, key) => locks.acquire(key, { ttl: 0 }), 'ttl'],
      ['acquire ttl "x"', (locks, key) => locks.acquire(key, { ttl: 'x' as unknown as number }), 'ttl'],
      ['acquire wait -1', (locks, key) => locks.acquire(key, { wait: -1 }), 'wait'],
      ['acquire wait NaN', (locks, key) => locks.acquire(key, { wait: NaN }), 'wait'],
      [
        'tryAcquire autoExtend "no"',
        (locks, key) => locks.tryAcquire(key, { autoExtend: 'no' as unknown as boolean }),
        'autoExtend',
      ],
      ['tryAcquire maxHold -1', (locks, key) => locks.tryAcquire(key, { maxHold: -1 }), 'maxHold'],
      [
        'withLock reentrant "y"',
        (locks, key, ran) => locks.withLock(key, ran, { reentrant: 'y' as unknown as boolean }),
        'reentrant',
      ],
      [
        'acquire signal that is not an AbortSignal',
        (locks, key) => locks.acquire(key, { signal: {} as AbortSignal }),
        'signal',
      ],
      ['acquire options as a string', (locks, key) => locks.acquire(key, 'fast' as unknown as object), 'options'],
      [
        'withLock options as a number',
        (locks, key, ran) => locks.withLock(key, ran, 42 as unknown as object),
        'options',
      ],
      ['extend(0): would expire the lease at once', (locks, key) => extendHeld(locks, key, 0), 'ttl'],
      ['extend(-5)', (locks, key) => extendHeld(locks, key, -5), 'ttl'],
      ['extend(NaN)', (locks, key) => extendHeld(locks, key, NaN), 'ttl'],
      ['extend(Infinity)', (locks, key) => extendHeld(locks, key, Infinity), 'ttl'],
      ["extend(0.5): less than Redis's 1 ms", (locks, key) => extendHeld(locks, key, 0.5), 'ttl'],
    ];

    /** Holds `key`, tries the bad extend, and releases: the release must find the lease intact. */
    async function extendHeld(locks: LockService, key: string, ttl: number): Promise<void> {
      const lock = await locks.acquire(key);
      try {
        await lock.extend(ttl);
      } finally {
        expect(lock.signal.aborted).toBe(false);
        expect(await lock.release()).toBe(true);
      }
    }

    it.each(rows)('%s', async (_case, call, option) => {
      const { locks } = await apps.start({ redis: server.url });
      let ran = false;
      await expectRefused(() => call(locks, uniqueKey('call'), () => (ran = true)), LockOptionsError, option);
      expect(ran).toBe(false);
    });
  });

  describe('keys: an InvalidLockKeyError before any Redis command', () => {
    const rows: [string, unknown][] = [
      ['an empty string', ''],
      ['undefined', undefined],
      ['null', null],
      ['a number', 42],
      ['NaN', NaN],
      ['an object', { id: 1 }],
      ['a symbol', Symbol('key')],
      ['a function', () => 'key'],
      ['an empty array', []],
      ['an array with an empty string', ['ok', '']],
      ['an array with a number', ['ok', 5]],
      ['a nested array', [['nested']]],
      [`a key of ${MAX_KEY_LENGTH + 1} characters`, 'k'.repeat(MAX_KEY_LENGTH + 1)],
    ];

    it.each(rows)('acquire / tryAcquire / withLock with %s', async (_case, key) => {
      const { locks } = await apps.start({ redis: server.url });
      const before = await server.command('INFO', 'commandstats');
      let ran = false;
      await expectRefused(() => locks.acquire(key as string), InvalidLockKeyError);
      await expectRefused(() => locks.tryAcquire(key as string), InvalidLockKeyError);
      await expectRefused(() => locks.withLock(key as string, () => (ran = true)), InvalidLockKeyError);
      expect(ran).toBe(false);
      // Refused before Redis: no script ran.
      expect(evalCalls(await server.command('INFO', 'commandstats'))).toBe(evalCalls(before));
    });

    it('isLocked with an array (it takes one key)', async () => {
      const { locks } = await apps.start({ redis: server.url });
      await expectRefused(() => locks.isLocked(['a'] as unknown as string), InvalidLockKeyError);
    });
  });

  describe('@Locked templates malformed at bootstrap: a LockOptionsError while the class loads', () => {
    const rows: [string, unknown, unknown][] = [
      ['an unclosed placeholder', 'order:{params.id', undefined],
      ['a stray closing brace', 'order:}', undefined],
      ['an empty placeholder', 'order:{}', undefined],
      ['two placeholders with nothing between them', 'order:{0}{1}', undefined],
      ['argument and request placeholders mixed', 'order:{0}:{params.id}', undefined],
      ['an unknown placeholder root', 'order:{session.id}', undefined],
      ['an empty template', '', undefined],
      ['an empty array of templates', [], undefined],
      ['a number in the array of templates', ['order:{0}', 42], undefined],
      ['a key of the wrong type', 42, undefined],
      ['onBusy "maybe"', 'order:{0}', { onBusy: 'maybe' }],
      ['options as a string', 'order:{0}', 'fast'],
      ['a constant key that is too long', 'k'.repeat(MAX_KEY_LENGTH + 1), undefined],
    ];

    it.each(rows)('%s', async (_case, key, options) => {
      const before = await snapshot.take();
      expect(() => applyLocked(key, options)).toThrow(LockOptionsError);
      expect(await snapshot.changesSince(before)).toEqual([]);
    });

    @Injectable()
    class RoutePlaceholderOnService {
      @Locked('order:{params.id}')
      async run(): Promise<void> {}
    }
    @Controller('orders')
    class ArgumentPlaceholderOnRoute {
      @Get(':id')
      @Locked('order:{0}')
      find(): string {
        return 'found';
      }
    }
    @Injectable()
    class BadTtlOnService {
      @Locked('order:{0}', { ttl: -1 })
      async run(_id: string): Promise<void> {}
    }
    const bootstrapRows: [string, { providers?: Type[]; controllers?: Type[] }][] = [
      ['a request placeholder on a provider method', { providers: [RoutePlaceholderOnService] }],
      ['an argument placeholder on a route handler', { controllers: [ArgumentPlaceholderOnRoute] }],
      ['ttl -1 in @Locked options', { providers: [BadTtlOnService] }],
    ];

    it.each(bootstrapRows)('%s fails the application bootstrap', async (_case, metadata) => {
      const connections = (await clientList(server)).length;
      let locks: LockService | undefined;
      await expectRefused(async () => {
        const module = await Test.createTestingModule({
          imports: [LockModule.forRoot({ redis: server.url })],
          ...metadata,
        })
          .setLogger(quietLogger())
          .compile();
        locks = module.get(LockService);
        await module.init();
      }, LockOptionsError);
      // A failed init runs no shutdown hook: whatever the store opened would stay open.
      await settle();
      const left = (await clientList(server)).length - connections;
      await locks?.onApplicationShutdown();
      expect(left).toBe(0);
    });
  });

  describe('@Locked values at call: an InvalidLockKeyError, the method never run', () => {
    const runs: string[] = [];
    @Injectable()
    class Orders {
      @Locked('order:{0}')
      async byId(id: unknown): Promise<void> {
        runs.push(`byId ${String(id)}`);
      }

      @Locked('transfer:{1.accountId}')
      async byAccount(_tenant: string, payload: unknown): Promise<void> {
        runs.push(`byAccount ${JSON.stringify(payload)}`);
      }

      @Locked((source) => source.args[0] as string)
      async byFunction(key: unknown): Promise<void> {
        runs.push(`byFunction ${String(key)}`);
      }
    }
    const rows: [string, (orders: Orders) => Promise<void>][] = [
      ['{0} undefined', (orders) => orders.byId(undefined)],
      ['{0} null', (orders) => orders.byId(null)],
      ['{0} an object', (orders) => orders.byId({ id: 1 })],
      ['{0} an array', (orders) => orders.byId(['1'])],
      ['{0} an empty string', (orders) => orders.byId('')],
      ['{0} NaN', (orders) => orders.byId(NaN)],
      ['{0} a lone surrogate', (orders) => orders.byId('\uD800')],
      [`{0} making a key over ${MAX_KEY_LENGTH} characters`, (orders) => orders.byId('k'.repeat(MAX_KEY_LENGTH))],
      ['{1.accountId} missing from the payload', (orders) => orders.byAccount('t', {})],
      ['{1.accountId} with no payload at all', (orders) => orders.byAccount('t', undefined)],
      ['a key function returning a number', (orders) => orders.byFunction(42)],
      ['a key function returning an empty string', (orders) => orders.byFunction('')],
    ];

    it.each(rows)('%s', async (_case, call) => {
      const module = await Test.createTestingModule({
        imports: [LockModule.forRoot({ redis: server.url })],
        providers: [Orders],
      })
        .setLogger(quietLogger())
        .compile();
      await module.init();
      try {
        await expectRefused(() => call(module.get(Orders)), InvalidLockKeyError);
        expect(runs).toEqual([]);
      } finally {
        await module.close();
      }
    });
  });

  describe('HTTP bodies of the sample app: 400 from the right layer, no account and no lock left behind', () => {
    let app: INestApplication;
    let http: App;
    beforeAll(async () => {
      const module = await Test.createTestingModule({
        imports: [
          AppModule.forRoot({
            port: 0,
            locks: true,
            interestRate: 0,
            instance: 'bad-input',
            store: { kind: 'redis', url: server.url },
          }),
        ],
      })
        .setLogger(quietLogger())
        .compile();
      app = module.createNestApplication({ logger: ['fatal'] });
      await app.init();
      void app.get(SchedulerRegistry).getCronJob(INTEREST_CRON_JOB).stop();
      http = app.getHttpServer() as App;
    });
    afterAll(() => app?.close());

    /** Which layer refused the request, read from the response body. */
    function refusedBy(body: { message?: unknown; error?: unknown }): string {
      if (Array.isArray(body.message)) return 'ValidationPipe';
      if (typeof body.message === 'string' && body.message.startsWith('Invalid lock key')) return 'InvalidLockKeyError';
      if (typeof body.message === 'string' && /JSON/.test(body.message)) return 'body parser';
      return String(body.error);
    }

    const long = 'a'.repeat(MAX_KEY_LENGTH + 1);
    const rows: [string, number, string, string, string | object][] = [
      ['transfer: empty body', 400, 'InvalidLockKeyError', '/transfers', {}],
      ['transfer: "to" missing', 400, 'InvalidLockKeyError', '/transfers', { from: 'a1', amount: 5 }],
      ['transfer: "from" null', 400, 'InvalidLockKeyError', '/transfers', { from: null, to: 'b1', amount: 5 }],
      ['transfer: "from" an empty string', 400, 'InvalidLockKeyError', '/transfers', { from: '', to: 'b1', amount: 5 }],
      [
        'transfer: "from" an operator object',
        400,
        'InvalidLockKeyError',
        '/transfers',
        { from: { $gt: '' }, to: 'b1', amount: 5 },
      ],
      ['transfer: "from" an array', 400, 'InvalidLockKeyError', '/transfers', { from: ['a1'], to: 'b1', amount: 5 }],
      [
        'transfer: "from" too long for a key',
        400,
        'InvalidLockKeyError',
        '/transfers',
        { from: long, to: 'b1', amount: 5 },
      ],
      [
        'transfer: "from" a lone surrogate',
        400,
        'InvalidLockKeyError',
        '/transfers',
        '{"from":"\\ud800","to":"b1","amount":5}',
      ],
      ['transfer: a JSON array as the body', 400, 'InvalidLockKeyError', '/transfers', '[]'],
      ['transfer: "from" a number', 400, 'ValidationPipe', '/transfers', { from: 5, to: 'b1', amount: 5 }],
      ['transfer: same account twice', 400, 'ValidationPipe', '/transfers', { from: 'a1', to: 'a1', amount: 5 }],
      ['transfer: negative amount', 400, 'ValidationPipe', '/transfers', { from: 'a1', to: 'b1', amount: -5 }],
      ['transfer: amount as text', 400, 'ValidationPipe', '/transfers', { from: 'a1', to: 'b1', amount: 'lots' }],
      [
        'transfer: unknown field',
        400,
        'ValidationPipe',
        '/transfers',
        { from: 'a1', to: 'b1', amount: 5, admin: true },
      ],
      [
        'transfer: id with a colon (a key-template separator)',
        400,
        'ValidationPipe',
        '/transfers',
        { from: 'a:1', to: 'b1', amount: 5 },
      ],
      ['transfer: malformed JSON', 400, 'body parser', '/transfers', '{"from":'],
      [
        'transfer: between accounts that do not exist',
        404,
        'AccountNotFoundError',
        '/transfers',
        { from: 'ghost1', to: 'ghost2', amount: 5 },
      ],
      ['deposit: id with a space', 400, 'ValidationPipe', '/accounts/a%20b/deposit', { amount: 5 }],
      ['deposit: amount 0', 400, 'ValidationPipe', '/accounts/a1/deposit', { amount: 0 }],
      ['deposit: no body', 400, 'ValidationPipe', '/accounts/a1/deposit', ''],
    ];

    it.each(rows)('%s → %d (%s)', async (_case, status, layer, path, body) => {
      const before = await snapshot.take();
      let call = request(http).post(path);
      if (typeof body === 'string') call = call.set('content-type', 'application/json').send(body);
      else call = call.send(body);
      const response = await call;
      expect([response.status, refusedBy(response.body as object)]).toEqual([status, layer]);
      // No account was opened, no lease left: at most the fence counter of a lock taken before validation.
      expect(await snapshot.changesSince(before, /^bank:lock:\{.*\}:fence$/)).toEqual([]);
    });
  });

  describe('Redis answering with an error', () => {
    /** Foreign data planted at a lock's Redis keys: the library must refuse it and leave it as it was. */
    const rows: [
      string,
      (key: string) => Promise<unknown>,
      (locks: LockService, key: string, ran: () => void) => Promise<unknown>,
      ErrorClass,
    ][] = [
      [
        "a LIST at the lock's name (acquire)",
        (key) => server.command('RPUSH', `lock:{${key}}`, 'x', 'y'),
        (locks, key) => locks.acquire(key),
        InvalidLockKeyError,
      ],
      [
        "a HASH at the lock's name (tryAcquire)",
        (key) => server.command('HSET', `lock:{${key}}`, 'f', 'v'),
        (locks, key) => locks.tryAcquire(key),
        InvalidLockKeyError,
      ],
      [
        "a SET at the lock's name (withLock)",
        (key) => server.command('SADD', `lock:{${key}}`, 'm'),
        (locks, key, ran) => locks.withLock(key, ran),
        InvalidLockKeyError,
      ],
      [
        'a LIST at the fence key',
        (key) => server.command('RPUSH', `lock:{${key}}:fence`, '1'),
        (locks, key) => locks.acquire(key),
        InvalidLockKeyError,
      ],
      [
        'text at the fence key',
        (key) => server.command('SET', `lock:{${key}}:fence`, 'twelve'),
        (locks, key) => locks.acquire(key),
        InvalidLockKeyError,
      ],
      [
        'a fence counter at the 64-bit limit',
        (key) => server.command('SET', `lock:{${key}}:fence`, '9223372036854775807'),
        (locks, key) => locks.acquire(key),
        InvalidLockKeyError,
      ],
      [
        'a LIST at the second key of a multi-key lock',
        (key) => server.command('RPUSH', `lock:{${key}:b}`, 'x'),
        (locks, key) => locks.acquire([`${key}:a`, `${key}:b`]),
        InvalidLockKeyError,
      ],
      [
        'a LIST at the fence key of the second key of a multi-key lock',
        (key) => server.command('RPUSH', `lock:{${key}:b}:fence`, 'x'),
        (locks, key) => locks.acquire([`${key}:a`, `${key}:b`]),
        InvalidLockKeyError,
      ],
      [
        "a string with no expiry at the lock's name (looks held forever)",
        (key) => server.command('SET', `lock:{${key}}`, 'not a token'),
        (locks, key) => locks.acquire(key, { wait: 0 }),
        LockNotAcquiredError,
      ],
    ];

    it.each(rows)('%s', async (_case, plant, call, expected) => {
      const { locks } = await apps.start({ redis: server.url });
      const key = uniqueKey('foreign');
      await plant(key);
      let ran = false;
      // expectRefused compares everything, the planted key included: it must be untouched.
      await expectRefused(() => call(locks, key, () => (ran = true)), expected);
      expect(ran).toBe(false);
      expect(await server.command('EXISTS', `lock:{${key}:a}`)).toBe(0);
    });

    it.each(['twelve', '1.5', '007', '-5', '9007199254740990', '9223372036854775807', '99999999999999999999'])(
      'text %j with an expiry at the fence key is refused and left as found, its value and its expiry',
      async (foreign) => {
        const { locks } = await apps.start({ redis: server.url });
        const key = uniqueKey('foreign-fence');
        const fenceKey = `lock:{${key}}:fence`;
        await server.command('SET', fenceKey, foreign, 'PX', '60000');
        await expect(locks.acquire(key)).rejects.toBeInstanceOf(InvalidLockKeyError);
        await expect(locks.acquire([key, uniqueKey('other')])).rejects.toBeInstanceOf(InvalidLockKeyError);
        expect(await server.command('GET', fenceKey)).toBe(foreign);
        expect(Number(await server.command('PTTL', fenceKey))).toBeGreaterThan(50_000);
        expect(await server.command('EXISTS', `lock:{${key}}`)).toBe(0);
      },
    );

    it("the lock's key replaced by a LIST while held: extend() is a LockLostError, the signal aborts, the LIST stays", async () => {
      const { locks } = await apps.start({ redis: server.url, autoExtend: false });
      const key = uniqueKey('replaced');
      const lock = await locks.acquire(key);
      await server.command('DEL', `lock:{${key}}`);
      await server.command('RPUSH', `lock:{${key}}`, 'someone', 'else');
      await expectRefused(() => lock.extend(), LockLostError);
      expect(lock.signal.reason).toBeInstanceOf(LockLostError);
      const before = await snapshot.take();
      expect(await lock.release()).toBe(false);
      // A lost lock's release() answers without waiting for its deletion, which still goes out: a command sent
      // after it on the same connection is answered after it has run.
      await locks.isLocked(uniqueKey('after-the-release'));
      expect(await snapshot.changesSince(before)).toEqual([]);
      expect(await server.command('LRANGE', `lock:{${key}}`, '0', '-1')).toEqual(['someone', 'else']);
    });

    it.each<[string, string[], string[]]>([
      [
        'out of memory (maxmemory reached, noeviction)',
        ['CONFIG', 'SET', 'maxmemory', '1'],
        ['CONFIG', 'SET', 'maxmemory', '0'],
      ],
      ['a read-only replica (after a failover)', ['REPLICAOF', '127.0.0.1', '1'], ['REPLICAOF', 'NO', 'ONE']],
    ])('Redis refusing writes, %s: a LockUnavailableError, nothing written', async (_case, refuse, restore) => {
      const { locks } = await apps.start({ redis: server.url });
      await (await locks.acquire(uniqueKey('warm-up'))).release();
      await server.command('CONFIG', 'SET', 'maxmemory-policy', 'noeviction');
      await server.command(...refuse);
      try {
        let ran = false;
        await expectRefused(() => locks.acquire(uniqueKey('refused'), { wait: 0 }), LockUnavailableError);
        await expectRefused(() => locks.withLock(uniqueKey('refused'), () => (ran = true)), LockUnavailableError);
        expect(ran).toBe(false);
      } finally {
        await server.command(...restore);
      }
      expect(await (await locks.acquire(uniqueKey('restored'), { wait: 0 })).release()).toBe(true);
    });

    it('Redis requiring a password the options do not give: a LockUnavailableError', async () => {
      // Set after start: the harness checks a new server with commands that would need the password.
      const guarded = await startRedis();
      await guarded.command('CONFIG', 'SET', 'requirepass', 'secret');
      try {
        const { locks } = await apps.start({ redis: guarded.url });
        const { error } = await rejectionOf(locks.acquire(uniqueKey('noauth'), { wait: 0 }));
        expect(error).toBeInstanceOf(LockUnavailableError);
        expect(String((error as Error).message)).toMatch(/NOAUTH|auth/i);
      } finally {
        await guarded.stop();
      }
    });
  });
});

/** createLockApp, closing the app again should it start after all (the row then fails, without a leak). */
async function bootstrap(options: LockModuleOptions): Promise<void> {
  const app = await createLockApp(options);
  await app.close();
}

function quietLogger(): ConsoleLogger {
  return new ConsoleLogger({ logLevels: ['fatal'] });
}

/** Applies @Locked(key, options) to a fresh class's method, as loading a decorated class does. */
function applyLocked(key: unknown, options: unknown): void {
  class Target {
    method(): void {}
  }
  const descriptor = Object.getOwnPropertyDescriptor(Target.prototype, 'method') as PropertyDescriptor;
  Locked(key as LockedKey, options as LockedOptions)(Target.prototype, 'method', descriptor);
}

/** Scripts run so far, from INFO commandstats. */
function evalCalls(info: unknown): number {
  let calls = 0;
  for (const match of String(info).matchAll(/^cmdstat_(?:evalsha|eval):calls=(\d+)/gm)) calls += Number(match[1]);
  return calls;
}

/** Lets connections that are being opened or closed get there. */
function settle(): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, 150));
}
