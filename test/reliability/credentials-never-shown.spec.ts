import { ConsoleLogger, Controller, Get, type INestApplication, type LogLevel, Module } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import Redis from 'ioredis';
import Valkey from 'iovalkey';
import { inspect } from 'node:util';
import { createClient } from 'redis';
import request from 'supertest';
import { LockHealthIndicator, LockModule, type LockModuleOptions, LockService, Locked } from '../../lib';
import { eventually } from '../support/eventually';
import { type RedisProcess, startRedis } from '../support/redis-server';
import { type SentinelDeployment, startSentinelDeployment } from '../support/redis-sentinel';

/**
 * No credential reaches a log line, an error the library throws (message, cause chain, fields, at any depth of
 * util.inspect), an event, a health detail or an HTTP body: checked with real password-protected servers, a
 * wrong password, an ACL user refused a command (its right password must not show either), every client family
 * and Redlock. Each secret is a distinct string, so any of them found anywhere fails the test.
 */

const RIGHT = 'right-pw-7f3a';
const WRONG = 'wrong-pw-91c2';
const ACL_USER_PASSWORD = 'acl-pw-44be';
const SENTINEL_PASSWORD = 'sentinel-pw-0d8e';
const SECRETS = [RIGHT, WRONG, ACL_USER_PASSWORD, SENTINEL_PASSWORD];

/** Everything Nest's logger receives, each argument printed as a console logger would, at full depth. */
class CapturingLogger extends ConsoleLogger {
  readonly lines: string[] = [];
  constructor() {
    super({ logLevels: ['verbose', 'debug', 'log', 'warn', 'error', 'fatal'] });
  }
  protected override printMessages(messages: unknown[], context = '', level: LogLevel = 'log'): void {
    this.lines.push(`${level} [${context}] ${messages.map((message) => printed(message)).join(' ')}`);
  }
}

function printed(value: unknown): string {
  return typeof value === 'string' ? value : inspect(value, { depth: Infinity });
}

@Controller('orders')
class OrdersController {
  @Get(':id')
  @Locked('order:{params.id}', { wait: 0 })
  get(): string {
    return 'ran';
  }
}

/** What one application showed to the world while its store refused it. */
interface Shown {
  readonly everything: string;
  /** The advice every LockUnavailableError gave. */
  readonly messages: readonly string[];
}

async function exercise(options: LockModuleOptions): Promise<Shown> {
  const logger = new CapturingLogger();
  @Module({
    imports: [LockModule.forRoot({ ...options, ttl: 1_000, commandTimeout: 400 })],
    controllers: [OrdersController],
  })
  class AppModule {}
  const module = await Test.createTestingModule({ imports: [AppModule] })
    .setLogger(logger)
    .compile();
  const app: INestApplication = module.createNestApplication({ logger });
  await app.init();
  const locks = app.get(LockService);
  const shown: string[] = [];
  const messages: string[] = [];
  const events = locks.events.subscribe((event) => shown.push(JSON.stringify(event), printed(event)));
  const calls: (() => Promise<unknown>)[] = [
    () => locks.tryAcquire('k'),
    () => locks.acquire(['k', 'l'], { wait: 0 }),
    () => locks.withLock('k', () => 'never'),
    () => locks.acquire('s', { limit: 2, wait: 0 }),
    () => locks.acquire('rw', { mode: 'read', wait: 0 }),
    () => locks.isLocked('k'),
    () => locks.inspect('k'),
    () => locks.forceRelease('k'),
  ];
  try {
    // Side by side: a call on a connection that never authenticates waits out its command timeout.
    const errors = await Promise.all(
      calls.map((call) =>
        call().then(
          () => undefined,
          (caught: unknown) => caught,
        ),
      ),
    );
    for (const error of errors) {
      expect(error, 'every call fails while the store refuses the connection').toBeInstanceOf(Error);
      shown.push(printed(error), JSON.stringify(error), String((error as Error).stack));
      messages.push((error as Error).message);
    }
    shown.push(printed(await app.get(LockHealthIndicator).isHealthy('locks')));
    const response = await request(app.getHttpServer()).get('/orders/7');
    expect(response.status).toBe(503);
    shown.push(JSON.stringify(response.headers), response.text);
  } finally {
    events.unsubscribe();
    await app.close();
  }
  return { everything: [...shown, ...logger.lines].join('\n'), messages };
}

function expectNoSecret(shown: Shown): void {
  for (const secret of SECRETS) {
    const at = shown.everything.indexOf(secret);
    expect(at, `a credential is shown: …${shown.everything.slice(Math.max(0, at - 300), at + 40)}…`).toBe(-1);
  }
  expect(shown.everything).not.toContain('maxRetriesPerRequest');
}

function expectAdvice(shown: Shown, advice: RegExp): void {
  for (const message of shown.messages) {
    expect(message).toMatch(advice);
    expect(message).not.toContain('Check that Redis is reachable');
  }
}

const AUTHENTICATION_FAILED = /authentication failed\): check the username and password/;

describe('credentials never shown', () => {
  const servers: RedisProcess[] = [];
  let redis: RedisProcess;
  const lent: { close(): unknown }[] = [];

  beforeAll(async () => {
    for (let i = 0; i < 3; i++) {
      const server = await startRedis();
      // The ACL user may authenticate but not run scripts: the refusal comes after a successful AUTH.
      await server.command(
        'ACL',
        'SETUSER',
        'locks',
        'on',
        `>${ACL_USER_PASSWORD}`,
        '~*',
        '&*',
        '+@connection',
        '+info',
        '+subscribe',
        '+ping',
      );
      await server.command('CONFIG', 'SET', 'requirepass', RIGHT);
      servers.push(server);
    }
    redis = servers[0];
  });

  afterEach(async () => {
    await Promise.allSettled(lent.splice(0).map((client) => client.close()));
  });

  afterAll(async () => {
    await Promise.all(servers.map((server) => server.stop()));
  });

  it('a wrong password in the URL: named as an authentication failure, shown nowhere', async () => {
    const shown = await exercise({ redis: `redis://:${WRONG}@${redis.host}:${redis.port}` });
    expectNoSecret(shown);
    expectAdvice(shown, AUTHENTICATION_FAILED);
  });

  it('a wrong username and password in ioredis options', async () => {
    const shown = await exercise({
      redis: { host: redis.host, port: redis.port, username: 'default', password: WRONG },
    });
    expectNoSecret(shown);
    expectAdvice(shown, AUTHENTICATION_FAILED);
  });

  it("an ACL user refused a command: named as the ACL's refusal, its right password shown nowhere", async () => {
    const shown = await exercise({ redis: `redis://locks:${ACL_USER_PASSWORD}@${redis.host}:${redis.port}` });
    expectNoSecret(shown);
    expectAdvice(shown, /ACL refused the connection's user/);
  });

  it('borrowed ioredis, iovalkey and node-redis clients with a wrong password', async () => {
    const ioredis = new Redis({ host: redis.host, port: redis.port, password: WRONG, lazyConnect: true });
    ioredis.on('error', () => undefined);
    lent.push({ close: () => ioredis.disconnect() });
    expectNoSecret(await exercise({ redis: ioredis }));

    const valkey = new Valkey({ host: redis.host, port: redis.port, password: WRONG, lazyConnect: true });
    valkey.on('error', () => undefined);
    lent.push({ close: () => valkey.disconnect() });
    expectNoSecret(await exercise({ redis: valkey }));

    const nodeRedis = createClient({ url: `redis://default:${WRONG}@${redis.host}:${redis.port}` });
    nodeRedis.on('error', () => undefined);
    lent.push({ close: () => nodeRedis.isOpen && nodeRedis.destroy() });
    const shown = await exercise({ redis: nodeRedis });
    expectNoSecret(shown);
    expectAdvice(shown, AUTHENTICATION_FAILED);
  });

  it('Redlock over three nodes with wrong passwords', async () => {
    const shown = await exercise({ nodes: servers.map((server) => `redis://:${WRONG}@${server.host}:${server.port}`) });
    expectNoSecret(shown);
    expectAdvice(shown, AUTHENTICATION_FAILED);
  });

  describe('Sentinel', () => {
    let deployment: SentinelDeployment;

    beforeAll(async () => {
      deployment = await startSentinelDeployment();
      for (const server of [deployment.master, deployment.replica])
        await server.command('CONFIG', 'SET', 'requirepass', RIGHT);
    });

    afterAll(async () => {
      await deployment?.stop();
    });

    it('a wrong data password and a sentinel password the sentinels do not expect', async () => {
      const shown = await exercise({
        redis: {
          sentinels: [...deployment.sentinels],
          name: deployment.masterName,
          password: WRONG,
          sentinelPassword: SENTINEL_PASSWORD,
        },
      });
      expectNoSecret(shown);
    });
  });
});

/** The README's ACL rule for the module's user ("Redis ACL"): everything the module does works under it. */
const README_ACL_RULES = [
  '~lock:*',
  '&lock:*',
  '+@scripting',
  '+@read',
  '+@write',
  '+@pubsub',
  '+@connection',
  '+info',
  '+wait',
  '+time',
];

describe("the README's ACL rule for the module's user", () => {
  let server: RedisProcess;

  beforeAll(async () => {
    server = await startRedis();
    await server.command('ACL', 'SETUSER', 'locks', 'on', `>${ACL_USER_PASSWORD}`, ...README_ACL_RULES);
  });

  afterAll(async () => {
    await server?.stop();
  });

  it('lets every primitive, waiting and the operator calls work', async () => {
    const module = await Test.createTestingModule({
      imports: [
        LockModule.forRoot({ redis: `redis://locks:${ACL_USER_PASSWORD}@${server.host}:${server.port}`, ttl: 2_000 }),
      ],
    })
      .setLogger(new ConsoleLogger({ logLevels: ['error'] }))
      .compile();
    await module.init();
    const locks = module.get(LockService);
    try {
      const held = await locks.acquire('acl');
      const waiter = locks.acquire('acl', { wait: 5_000 });
      expect(await locks.inspect('acl')).not.toBeNull();
      await held.release();
      await (await waiter).release();
      const permit = await locks.acquire('acl-semaphore', { limit: 2 });
      const reader = await locks.acquire('acl-rw', { mode: 'read' });
      expect(await locks.isLocked('acl-rw')).toBe(true);
      expect(await locks.forceRelease('acl-rw')).toBe(true);
      await permit.release();
      await reader.release();
      expect((await module.get(LockHealthIndicator).isHealthy('locks')).locks.status).toBe('up');
    } finally {
      await module.close();
    }
  });

  it('wakes a waiter for a release made while its subscriber connection reconnected', async () => {
    const url = `redis://locks:${ACL_USER_PASSWORD}@${server.host}:${server.port}`;
    const modules = await Promise.all(
      [0, 1].map(async () => {
        const module = await Test.createTestingModule({ imports: [LockModule.forRoot({ redis: url })] })
          .setLogger(new ConsoleLogger({ logLevels: ['error'] }))
          .compile();
        return module.init();
      }),
    );
    const [holder, waiter] = modules.map((module) => module.get(LockService));
    try {
      const held = await holder.acquire('acl-reconnect', { ttl: 20_000 });
      const waiting = waiter.acquire('acl-reconnect', { wait: 6_000 });
      await eventually(
        async () =>
          JSON.stringify(await server.command('PUBSUB', 'NUMSUB', 'lock:{acl-reconnect}:released')).endsWith(',1]'),
        3_000,
        'the waiter subscribed',
      );
      await server.command('CLIENT', 'KILL', 'TYPE', 'pubsub');
      const releasedAt = performance.now();
      await held.release();
      // Its resubscription (every channel under the ACL's `&lock:*`) announces what it may have missed.
      await (await waiting).release();
      expect(performance.now() - releasedAt).toBeLessThan(3_000);
    } finally {
      await Promise.all(modules.map((module) => module.close()));
    }
  });
});
