import { ApolloDriver, type ApolloDriverConfig } from '@nestjs/apollo';
import { Injectable } from '@nestjs/common';
import { APP_FILTER } from '@nestjs/core';
import { Args, GraphQLModule, Mutation, Query, Resolver } from '@nestjs/graphql';
import { request as httpRequest } from 'node:http';
import request from 'supertest';
import { LockErrorFilter, LockService } from '../../../lib';
import { LockKeyNamer } from '../../../lib/keys';
import { Locked } from '../../../lib/decorators';
import { startRedis, type RedisProcess } from '../../support/redis-server';
import { waiterAsleep } from '../../support/waiters';
import { Gates, eventually } from '../helpers/gates';
import { RecordingLogger, startHttpApp, type HttpTransportApp } from '../helpers/transport-apps';

/**
 * What a GraphQL client receives for each lock error (Apollo Server, code-first schema, real Nest app,
 * real Redis): a field error whose `extensions.code` says which, with keys and retryAfterMs when busy,
 * from a @Locked resolver (LockInterceptor) and from a @Locked service method (LockErrorFilter, with the
 * module's own mapping, `errorMapping`, off so that the filter alone answers; service-errors-map-themselves
 * .e2e-spec.ts covers the mapping).
 */

const gates = new Gates();
/** Every rebuild that got into its resolver, by id, in order. */
const rebuilt: string[] = [];
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
  @Locked('gql-payment:{0}', { wait: 0 })
  async capture(id: string | undefined) {
    await gates.get(`payment ${id}`).pass();
    return `captured ${id}`;
  }
}

@Resolver()
class OrdersResolver {
  constructor(private readonly payments: PaymentsService) {}

  @Query(() => String)
  health() {
    return 'ok';
  }

  @Mutation(() => String, { nullable: true })
  @Locked('gql-order:{data.id}', { wait: 0 })
  async pay(@Args('id', { type: () => String, nullable: true }) id?: string) {
    await gates.get(`order ${id}`).pass();
    return `paid ${id}`;
  }

  /** Waits for a busy key (the other mutations do not). */
  @Mutation(() => String, { nullable: true })
  @Locked('gql-report:{data.id}', { wait: 10_000 })
  async rebuild(@Args('id', { type: () => String, nullable: true }) id?: string) {
    rebuilt.push(String(id));
    await gates.get(`report ${id}`).pass();
    return `rebuilt ${id}`;
  }

  /** Not @Locked itself: the service method it calls is. */
  @Mutation(() => String, { nullable: true })
  capture(@Args('id', { type: () => String, nullable: true }) id?: string) {
    return this.payments.capture(id);
  }
}

interface GraphQLAnswer {
  status: number;
  body: {
    data?: Record<string, unknown> | null;
    errors?: { message: string; path?: string[]; extensions?: Record<string, unknown> }[];
  };
}

describe('lock errors over GraphQL (Apollo, code-first; real Nest app, real Redis)', () => {
  let redis: RedisProcess;
  let http: HttpTransportApp;
  const logger = new RecordingLogger();

  /** One mutation, sent at once; `id` omitted when undefined. */
  const mutate = (field: 'pay' | 'capture' | 'rebuild', id?: string): Promise<GraphQLAnswer> =>
    request(http.server)
      .post('/graphql')
      .send({ query: `mutation ($id: String) { ${field}(id: $id) }`, variables: id === undefined ? {} : { id } })
      .then((response) => ({ status: response.status, body: response.body as GraphQLAnswer['body'] }));

  async function whileHeld(gate: string, first: () => Promise<GraphQLAnswer>, second: () => Promise<GraphQLAnswer>) {
    const held = first();
    await gates.get(gate).reached();
    const busy = await second();
    gates.get(gate).open();
    return { held: await held, busy };
  }

  /** The field error of an answer whose data is `{ [field]: null }`, without its source locations. */
  function fieldError(answer: GraphQLAnswer, field: string) {
    expect(answer.status).toBe(200);
    expect(answer.body.data).toEqual({ [field]: null });
    expect(answer.body.errors).toHaveLength(1);
    const { message, path, extensions } = answer.body.errors![0]!;
    return { message, path, extensions };
  }

  beforeAll(async () => {
    redis = await startRedis();
    const graphql = GraphQLModule.forRoot<ApolloDriverConfig>({ driver: ApolloDriver, autoSchemaFile: true });
    http = await startHttpApp(
      'express',
      redis.url,
      {
        imports: [graphql],
        providers: [OrdersResolver, PaymentsService, { provide: APP_FILTER, useClass: LockErrorFilter }],
      },
      logger,
      { errorMapping: false },
    );
  });
  afterAll(async () => {
    gates.openAll();
    await http?.close();
    await redis?.stop();
  });

  it('a @Locked resolver, busy: extensions { code LOCK_BUSY, keys, retryAfterMs }; logged at debug only', async () => {
    const mark = logger.entries.length;
    const { held, busy } = await whileHeld(
      'order 1',
      () => mutate('pay', '1'),
      () => mutate('pay', '1'),
    );

    expect(held.body).toEqual({ data: { pay: 'paid 1' } });
    expect(fieldError(busy, 'pay')).toEqual({
      message: BUSY_MESSAGE('gql-order:1'),
      path: ['pay'],
      extensions: { code: 'LOCK_BUSY', keys: ['gql-order:1'], retryAfterMs: expect.any(Number) },
    });
    expect(busy.body.errors![0]!.extensions!.retryAfterMs).toBeGreaterThan(0);

    expect(logger.since(mark, 'error')).toEqual([]);
    expect(logger.since(mark, 'debug')).toContainEqual({
      level: 'debug',
      context: 'LockInterceptor',
      message: BUSY_LOG('gql-order:1'),
    });
  });

  it('a @Locked resolver, bad key: extensions { code LOCK_INVALID_KEY }, naming the placeholder', async () => {
    const mark = logger.entries.length;
    expect(fieldError(await mutate('pay'), 'pay')).toEqual({
      message: BAD_KEY_MESSAGE('gql-order:{data.id}', '{data.id}'),
      path: ['pay'],
      extensions: { code: 'LOCK_INVALID_KEY' },
    });
    expect(logger.since(mark, 'error')).toEqual([]);
  });

  it('a @Locked service method under a plain resolver, with LockErrorFilter: the same busy and bad-key errors', async () => {
    const mark = logger.entries.length;
    const { held, busy } = await whileHeld(
      'payment 1',
      () => mutate('capture', '1'),
      () => mutate('capture', '1'),
    );
    expect(held.body).toEqual({ data: { capture: 'captured 1' } });
    expect(fieldError(busy, 'capture')).toEqual({
      message: BUSY_MESSAGE('gql-payment:1'),
      path: ['capture'],
      extensions: { code: 'LOCK_BUSY', keys: ['gql-payment:1'], retryAfterMs: expect.any(Number) },
    });
    expect(fieldError(await mutate('capture'), 'capture')).toEqual({
      message: BAD_KEY_MESSAGE('gql-payment:{0}', '{0}'),
      path: ['capture'],
      extensions: { code: 'LOCK_INVALID_KEY' },
    });
    expect(logger.since(mark, 'error')).toEqual([]);
  });

  it('a client that disconnects while its mutation waits for a busy key: the wait ends, the resolver never runs for it', async () => {
    const id = 'gone-1';
    const locks = http.app.get(LockService);
    const held = mutate('rebuild', id);
    await gates.get(`report ${id}`).reached();

    // Sent on a socket of its own, then dropped before any answer.
    const leaver = httpRequest(`${http.baseUrl}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
    });
    leaver.on('error', () => undefined); // the socket this test destroys
    leaver.end(JSON.stringify({ query: 'mutation ($id: String) { rebuild(id: $id) }', variables: { id } }));
    await waiterAsleep(locks, `gql-report:${id}`);
    const mark = logger.entries.length;
    leaver.destroy();
    const names = [new LockKeyNamer('lock:').names(`gql-report:${id}`)];
    await eventually(async () => !locks.store.hasWaiters(names), 5_000, 'the disconnected mutation stopped waiting');

    gates.get(`report ${id}`).open();
    expect((await held).body).toEqual({ data: { rebuild: `rebuilt ${id}` } });
    expect((await mutate('rebuild', id)).body).toEqual({ data: { rebuild: `rebuilt ${id}` } });
    // The holder and the next client; the one that left never got in (it would have, before the next).
    expect(rebuilt.filter((entry) => entry === id)).toHaveLength(2);
    expect(logger.since(mark, 'error')).toEqual([]);
    expect(logger.since(mark, 'debug')).toContainEqual({
      level: 'debug',
      context: 'LockInterceptor',
      message:
        'Stopped waiting for "gql-report:{data.id}": the HTTP client disconnected while the request waited for its lock',
    });
  });

  describe('Redis down (the server killed)', () => {
    afterAll(() => redis.restart());

    it('resolver and service method: extensions { code LOCK_UNAVAILABLE }, logged as a warning', async () => {
      await redis.kill();
      const mark = logger.entries.length;
      for (const [field, key] of [
        ['pay', 'gql-order:down'],
        ['capture', 'gql-payment:down'],
      ] as const) {
        expect(fieldError(await mutate(field, 'down'), field)).toEqual({
          // The store's detail (host, port, driver error) stays in the server's log.
          message: `Lock store unavailable for "${key}"; try again later.`,
          path: [field],
          extensions: { code: 'LOCK_UNAVAILABLE' },
        });
      }
      expect(gates.get('order down').arrivals).toBe(0);
      expect(gates.get('payment down').arrivals).toBe(0);
      const warnings = logger.since(mark, 'warn').map((entry) => entry.context);
      expect(warnings).toEqual(expect.arrayContaining(['LockInterceptor', 'LockErrorFilter']));
    });
  });
});
