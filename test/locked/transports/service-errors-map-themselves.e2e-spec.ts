import { ApolloDriver, type ApolloDriverConfig } from '@nestjs/apollo';
import {
  Body,
  Catch,
  Controller,
  Injectable,
  Param,
  Post,
  UseFilters,
  type ArgumentsHost,
  type ExceptionFilter,
  type ModuleMetadata,
} from '@nestjs/common';
import { APP_FILTER, BaseExceptionFilter, HttpAdapterHost } from '@nestjs/core';
import { Args, GraphQLModule, Mutation, Query, Resolver } from '@nestjs/graphql';
import { MessagePattern, Payload } from '@nestjs/microservices';
import { MessageBody, SubscribeMessage, WebSocketGateway } from '@nestjs/websockets';
import { firstValueFrom } from 'rxjs';
import type { Socket } from 'socket.io-client';
import request from 'supertest';
import { LockErrorFilter, LockNotAcquiredError, LockService, type LockModuleOptions } from '../../../lib';
import { Locked } from '../../../lib/decorators';
import { startRedis, type RedisProcess } from '../../support/redis-server';
import {
  connectSocket,
  RecordingLogger,
  startHttpApp,
  startTcpMicroservice,
  type HttpTransportApp,
  type LogEntry,
  type TcpTransportApp,
} from '../helpers/transport-apps';

/**
 * Lock errors thrown outside a @Locked route handler — a @Locked service method called by a plain route,
 * LockService.withLock in a handler — reach the client as a @Locked route's do, with nothing registered by the
 * application: the errors are HttpExceptions (status and body), and LockModule's global interceptor sets
 * Retry-After, logs once at the error's level, and gives RPC, GraphQL and WebSocket clients their transport's
 * shape. The application's own exception filters still see the lock errors themselves; `errorMapping: false`
 * turns the interceptor off. Real Nest apps, real Redis, real clients.
 */

const MAPPER = 'LockErrorMappingInterceptor';
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
    return { captured: id };
  }
}

@Controller()
class PaymentsController {
  constructor(
    private readonly payments: PaymentsService,
    private readonly locks: LockService,
  ) {}

  /** The reference: a @Locked route on the same keys as the service method. */
  @Post('locked-payments/:id')
  @Locked('payment:{params.id}', { wait: 0 })
  lockedCapture(@Param('id') id: string) {
    return { captured: id };
  }

  /** Not @Locked itself: the service method it calls is. */
  @Post('payments')
  capture(@Body() body: { id?: string }) {
    return this.payments.capture(body.id);
  }

  @Post('with-lock')
  withLock(@Body() body: { key: string }) {
    return this.locks.withLock(body.key, () => ({ done: body.key }), { wait: 0 });
  }

  /** Extends a lock it no longer holds: LockLostError. */
  @Post('lost')
  async lost(@Body() body: { key: string }) {
    const lock = await this.locks.acquire(body.key);
    await this.locks.forceRelease(body.key);
    await lock.extend();
  }

  /** A misspelt option (spread from an object, which TypeScript does not check): LockOptionsError at the call. */
  @Post('misspelt-option')
  misspelt() {
    return this.locks.withLock('misspelt', () => 'done', { ...({ wiat: 0 } as object) });
  }
}

/** The Retry-After a busy body's retryAfterMs makes: whole seconds, rounded up, at least 1. */
const retryAfterOf = (response: request.Response) =>
  String(Math.max(1, Math.ceil((response.body as { retryAfterMs: number }).retryAfterMs / 1000)));

/** Entries of `context` in `entries`. */
const from = (entries: LogEntry[], context: string) => entries.filter((entry) => entry.context === context);

describe.each(['express', 'fastify'] as const)(
  'on %s, with nothing registered (real Nest app, real Redis)',
  (platform) => {
    let redis: RedisProcess;
    let http: HttpTransportApp;
    let locks: LockService;
    const logger = new RecordingLogger();
    const post = (path: string, body: object = {}): Promise<request.Response> =>
      request(http.server)
        .post(path)
        .send(body)
        .then((response) => response);

    beforeAll(async () => {
      redis = await startRedis();
      http = await startHttpApp(
        platform,
        redis.url,
        { controllers: [PaymentsController], providers: [PaymentsService] },
        logger,
      );
      locks = http.app.get(LockService);
    });
    afterAll(async () => {
      await http?.close();
      await redis?.stop();
    });

    it('busy: a @Locked service method and withLock in a plain route answer 409 with Retry-After and the body of a @Locked route; logged once each, at debug', async () => {
      const key = `payment:${platform}-1`;
      const held = await locks.acquire(key);
      const mark = logger.entries.length;
      const reference = await post(`/locked-payments/${platform}-1`);
      const fromService = await post('/payments', { id: `${platform}-1` });
      const fromWithLock = await post('/with-lock', { key });
      await held.release();

      expect(reference.status).toBe(409);
      expect(reference.body).toEqual({
        statusCode: 409,
        error: 'Conflict',
        code: 'LOCK_BUSY',
        message: BUSY_MESSAGE(key),
        keys: [key],
        retryAfterMs: expect.any(Number),
      });
      for (const response of [fromService, fromWithLock]) {
        expect(response.status).toBe(409);
        // The estimate of when to retry is each caller's own (@Locked: recent holds; withLock: the lease left).
        expect(response.body).toEqual({ ...reference.body, retryAfterMs: expect.any(Number) });
        expect(response.body.retryAfterMs).toBeGreaterThan(0);
        expect(response.headers['retry-after']).toBe(retryAfterOf(response));
      }

      const entries = logger.since(mark);
      expect(entries.filter((entry) => entry.level === 'error')).toEqual([]);
      // The @Locked route's error is logged by LockInterceptor alone; each of the others once, here.
      expect(from(entries, 'LockInterceptor')).toEqual([
        { level: 'debug', context: 'LockInterceptor', message: BUSY_LOG(key) },
      ]);
      expect(from(entries, MAPPER)).toEqual([
        { level: 'debug', context: MAPPER, message: BUSY_LOG(key) },
        { level: 'debug', context: MAPPER, message: BUSY_LOG(key) },
      ]);
    });

    it('bad key: 400 with code LOCK_INVALID_KEY naming the value, no Retry-After; logged at debug only', async () => {
      const mark = logger.entries.length;
      const fromService = await post('/payments', {});
      expect(fromService.status).toBe(400);
      expect(fromService.headers['retry-after']).toBeUndefined();
      expect(fromService.body).toEqual({
        statusCode: 400,
        error: 'Bad Request',
        code: 'LOCK_INVALID_KEY',
        message: BAD_KEY_MESSAGE('payment:{0}', '{0}'),
      });

      const fromWithLock = await post('/with-lock', { key: '' });
      expect(fromWithLock.status).toBe(400);
      expect(fromWithLock.body).toEqual({
        statusCode: 400,
        error: 'Bad Request',
        code: 'LOCK_INVALID_KEY',
        message: expect.stringMatching(/^Invalid lock key "": /),
      });
      expect(logger.since(mark, 'error')).toEqual([]);
      expect(from(logger.since(mark, 'debug'), MAPPER)).toHaveLength(2);
    });

    it('lost: 500 with code LOCK_LOST, logged once as an error', async () => {
      const mark = logger.entries.length;
      const response = await post('/lost', { key: `lost:${platform}` });
      expect(response.status).toBe(500);
      expect(response.body).toEqual({
        statusCode: 500,
        error: 'Internal Server Error',
        code: 'LOCK_LOST',
        message: `The lock on "lost:${platform}" was lost while the request ran.`,
      });
      expect(logger.since(mark, 'error')).toEqual([
        { level: 'error', context: MAPPER, message: expect.stringMatching(/^Lock on "lost:.*" is lost: /) },
      ]);
    });

    it("a misspelt per-call option (LockOptionsError, a programming error): Nest's bare 500, logged once as an error", async () => {
      const mark = logger.entries.length;
      const response = await post('/misspelt-option');
      expect(response.status).toBe(500);
      expect(response.body).toEqual({ statusCode: 500, message: 'Internal server error' });
      expect(logger.since(mark, 'error')).toEqual([
        { level: 'error', context: MAPPER, message: expect.stringContaining("Invalid lock option 'wiat'") },
      ]);
    });

    describe('Redis down (the server killed)', () => {
      afterAll(() => redis.restart());

      it('503 with code LOCK_UNAVAILABLE, from the service method and from withLock; logged as a warning, not an error', async () => {
        await redis.kill();
        const mark = logger.entries.length;
        for (const [response, key] of [
          [await post('/payments', { id: `${platform}-down` }), `payment:${platform}-down`],
          [await post('/with-lock', { key: `down:${platform}` }), `down:${platform}`],
        ] as const) {
          expect(response.status).toBe(503);
          expect(response.headers['retry-after']).toBeUndefined();
          expect(response.body).toEqual({
            statusCode: 503,
            error: 'Service Unavailable',
            code: 'LOCK_UNAVAILABLE',
            message: `Lock store unavailable for "${key}"; try again later.`,
          });
        }
        expect(logger.since(mark, 'error')).toEqual([]);
        expect(from(logger.since(mark, 'warn'), MAPPER)).toHaveLength(2);
      });
    });
  },
);

/** A user's filter for busy locks, answering with its own status and body (any platform, through Nest's adapter). */
function busyFilter(status: number, mine: string) {
  @Catch(LockNotAcquiredError)
  class BusyFilter implements ExceptionFilter<LockNotAcquiredError> {
    constructor(readonly adapterHost: HttpAdapterHost) {}

    catch(error: LockNotAcquiredError, host: ArgumentsHost) {
      this.adapterHost.httpAdapter.reply(host.switchToHttp().getResponse(), { mine, keys: error.keys }, status);
    }
  }
  return BusyFilter;
}

const AppBusyFilter = busyFilter(429, 'APP_FILTER');
const MethodBusyFilter = busyFilter(423, '@UseFilters');

@Controller()
class FilteredController {
  constructor(private readonly payments: PaymentsService) {}

  @Post('payments')
  capture(@Body() body: { id?: string }) {
    return this.payments.capture(body.id);
  }

  @Post('method-filtered-payments')
  @UseFilters(MethodBusyFilter)
  methodFiltered(@Body() body: { id?: string }) {
    return this.payments.capture(body.id);
  }
}

/** A catch-all filter as error reporting uses one: it records what it sees and lets Nest answer. */
@Catch()
class ReportingFilter extends BaseExceptionFilter {
  readonly seen: unknown[] = [];

  override catch(exception: unknown, host: ArgumentsHost) {
    this.seen.push(exception);
    super.catch(exception, host);
  }
}

describe("the application's own exception filters still win (Express, real Redis)", () => {
  let redis: RedisProcess;
  const logger = new RecordingLogger();
  const apps: HttpTransportApp[] = [];

  async function start(
    scenario: ModuleMetadata,
    options: LockModuleOptions = {},
    configure?: (app: HttpTransportApp['app']) => void,
  ) {
    const http = await startHttpApp('express', redis.url, scenario, logger, options, configure);
    apps.push(http);
    return http;
  }

  /** Posts to `path` while `key` is held. */
  async function whileHeld(http: HttpTransportApp, key: string, path: string, body: object) {
    const held = await http.app.get(LockService).acquire(key);
    try {
      return await request(http.server).post(path).send(body);
    } finally {
      await held.release();
    }
  }

  beforeAll(async () => {
    redis = await startRedis();
  });
  afterAll(async () => {
    await Promise.all(apps.map((app) => app.close()));
    await redis?.stop();
  });

  it('a @Catch(LockNotAcquiredError) APP_FILTER of the root module, and a method-level @UseFilters one, answer instead', async () => {
    const http = await start({
      controllers: [FilteredController],
      providers: [PaymentsService, { provide: APP_FILTER, useClass: AppBusyFilter }],
    });
    const global = await whileHeld(http, 'payment:filtered-1', '/payments', { id: 'filtered-1' });
    expect(global.status).toBe(429);
    expect(global.body).toEqual({ mine: 'APP_FILTER', keys: ['payment:filtered-1'] });

    const method = await whileHeld(http, 'payment:filtered-2', '/method-filtered-payments', { id: 'filtered-2' });
    expect(method.status).toBe(423);
    expect(method.body).toEqual({ mine: '@UseFilters', keys: ['payment:filtered-2'] });
  });

  it('a catch-all global filter (useGlobalFilters) sees the lock error itself, and Nest still answers it with 409', async () => {
    let reporting: ReportingFilter | undefined;
    const http = await start({ controllers: [FilteredController], providers: [PaymentsService] }, {}, (app) => {
      reporting = new ReportingFilter(app.getHttpAdapter());
      app.useGlobalFilters(reporting);
    });
    const response = await whileHeld(http, 'payment:reported', '/payments', { id: 'reported' });
    expect(response.status).toBe(409);
    expect(response.body).toMatchObject({ code: 'LOCK_BUSY', keys: ['payment:reported'] });
    expect(response.headers['retry-after']).toBe(retryAfterOf(response));
    expect(reporting!.seen).toHaveLength(1);
    expect(reporting!.seen[0]).toBeInstanceOf(LockNotAcquiredError);
  });

  it('an application that registers LockErrorFilter gets the same answer, and the error is logged once', async () => {
    const http = await start({
      controllers: [FilteredController],
      providers: [PaymentsService, { provide: APP_FILTER, useClass: LockErrorFilter }],
    });
    const mark = logger.entries.length;
    const response = await whileHeld(http, 'payment:filter-kept', '/payments', { id: 'filter-kept' });
    expect(response.status).toBe(409);
    expect(response.body).toEqual({
      statusCode: 409,
      error: 'Conflict',
      code: 'LOCK_BUSY',
      message: BUSY_MESSAGE('payment:filter-kept'),
      keys: ['payment:filter-kept'],
      retryAfterMs: expect.any(Number),
    });
    expect(response.headers['retry-after']).toBe(retryAfterOf(response));
    const busyLines = logger.since(mark).filter((entry) => entry.message === BUSY_LOG('payment:filter-kept'));
    expect(busyLines).toEqual([{ level: 'debug', context: MAPPER, message: BUSY_LOG('payment:filter-kept') }]);
  });

  it('errorMapping: false turns the interceptor off: the error still answers 409 with its body, without Retry-After or a log line', async () => {
    const http = await start(
      { controllers: [FilteredController], providers: [PaymentsService] },
      { errorMapping: false },
    );
    const mark = logger.entries.length;
    const response = await whileHeld(http, 'payment:unmapped', '/payments', { id: 'unmapped' });
    expect(response.status).toBe(409);
    expect(response.body).toEqual({
      statusCode: 409,
      error: 'Conflict',
      code: 'LOCK_BUSY',
      message: BUSY_MESSAGE('payment:unmapped'),
      keys: ['payment:unmapped'],
      retryAfterMs: expect.any(Number),
    });
    expect(response.headers['retry-after']).toBeUndefined();
    expect(from(logger.since(mark), MAPPER)).toEqual([]);
  });
});

@Controller()
class RpcHandlers {
  constructor(private readonly locks: LockService) {}

  @MessagePattern('capture')
  capture(@Payload() data: { key: string }) {
    return this.locks.withLock(data.key, () => 'captured', { wait: 0 });
  }
}

describe('a TCP microservice handler calling withLock on a busy key (real ClientProxy, real Redis)', () => {
  let redis: RedisProcess;
  let tcp: TcpTransportApp;
  const logger = new RecordingLogger();

  beforeAll(async () => {
    redis = await startRedis();
    tcp = await startTcpMicroservice(redis.url, { controllers: [RpcHandlers] }, logger);
  });
  afterAll(async () => {
    await tcp?.close();
    await redis?.stop();
  });

  it("the client's observable errors with { status, code LOCK_BUSY, message, keys, retryAfterMs }; logged at debug", async () => {
    const held = await tcp.app.get(LockService).acquire('rpc:busy');
    const mark = logger.entries.length;
    const answer = await firstValueFrom(tcp.client.send('capture', { key: 'rpc:busy' })).then(
      (reply: unknown) => ({ reply }),
      (error: unknown) => ({ error }),
    );
    await held.release();
    expect(answer).toEqual({
      error: {
        status: 'error',
        code: 'LOCK_BUSY',
        message: BUSY_MESSAGE('rpc:busy'),
        keys: ['rpc:busy'],
        retryAfterMs: expect.any(Number),
      },
    });
    expect(logger.since(mark, 'error')).toEqual([]);
    expect(logger.since(mark, 'debug')).toContainEqual({
      level: 'debug',
      context: MAPPER,
      message: BUSY_LOG('rpc:busy'),
    });
  });
});

@Resolver()
class PaymentsResolver {
  constructor(private readonly locks: LockService) {}

  @Query(() => String)
  health() {
    return 'ok';
  }

  @Mutation(() => String, { nullable: true })
  capture(@Args('key', { type: () => String }) key: string) {
    return this.locks.withLock(key, () => 'captured', { wait: 0 });
  }
}

describe('a GraphQL resolver calling withLock on a busy key (Apollo, code-first; real Redis)', () => {
  let redis: RedisProcess;
  let http: HttpTransportApp;
  const logger = new RecordingLogger();

  beforeAll(async () => {
    redis = await startRedis();
    const graphql = GraphQLModule.forRoot<ApolloDriverConfig>({ driver: ApolloDriver, autoSchemaFile: true });
    http = await startHttpApp('express', redis.url, { imports: [graphql], providers: [PaymentsResolver] }, logger);
  });
  afterAll(async () => {
    await http?.close();
    await redis?.stop();
  });

  it('the field is null with an error whose extensions are { code LOCK_BUSY, keys, retryAfterMs }; logged at debug', async () => {
    const held = await http.app.get(LockService).acquire('gql:busy');
    const mark = logger.entries.length;
    const response = await request(http.server)
      .post('/graphql')
      .send({ query: 'mutation ($key: String!) { capture(key: $key) }', variables: { key: 'gql:busy' } });
    await held.release();
    expect(response.status).toBe(200);
    expect(response.body.data).toEqual({ capture: null });
    const [{ message, path, extensions }] = response.body.errors as {
      message: string;
      path: string[];
      extensions: object;
    }[];
    expect({ message, path, extensions }).toEqual({
      message: BUSY_MESSAGE('gql:busy'),
      path: ['capture'],
      extensions: { code: 'LOCK_BUSY', keys: ['gql:busy'], retryAfterMs: expect.any(Number) },
    });
    expect(logger.since(mark, 'error')).toEqual([]);
    expect(logger.since(mark, 'debug')).toContainEqual({
      level: 'debug',
      context: MAPPER,
      message: BUSY_LOG('gql:busy'),
    });
  });
});

@WebSocketGateway()
class PaymentsGateway {
  constructor(private readonly locks: LockService) {}

  @SubscribeMessage('capture')
  capture(@MessageBody() data: { key: string }) {
    return this.locks.withLock(data.key, () => 'captured', { wait: 0 });
  }
}

describe('a socket.io gateway handler calling withLock on a busy key (real socket.io client, real Redis)', () => {
  let redis: RedisProcess;
  let http: HttpTransportApp;
  let socket: Socket;
  const logger = new RecordingLogger();
  const exceptions: unknown[] = [];

  beforeAll(async () => {
    redis = await startRedis();
    http = await startHttpApp('express', redis.url, { providers: [PaymentsGateway] }, logger);
    socket = await connectSocket(http.baseUrl);
    socket.on('exception', (body: unknown) => exceptions.push(body));
  });
  afterAll(async () => {
    socket?.disconnect();
    await http?.close();
    await redis?.stop();
  });

  it('the acknowledgement and the exception event carry { status, code LOCK_BUSY, message, keys, retryAfterMs } (Nest applies global interceptors to gateways)', async () => {
    const held = await http.app.get(LockService).acquire('ws:busy');
    const mark = logger.entries.length;
    const ack: unknown = await socket.timeout(10_000).emitWithAck('capture', { key: 'ws:busy' });
    await held.release();
    const expected = {
      status: 'error',
      code: 'LOCK_BUSY',
      message: BUSY_MESSAGE('ws:busy'),
      keys: ['ws:busy'],
      retryAfterMs: expect.any(Number),
    };
    expect(ack).toEqual(expected);
    const deadline = performance.now() + 10_000;
    while (exceptions.length === 0 && performance.now() < deadline)
      await new Promise((resolve) => setTimeout(resolve, 10));
    expect(exceptions).toEqual([expected]);
    expect(logger.since(mark, 'error')).toEqual([]);
    expect(logger.since(mark, 'debug')).toContainEqual({
      level: 'debug',
      context: MAPPER,
      message: BUSY_LOG('ws:busy'),
    });
  });
});
