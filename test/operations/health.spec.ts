import { ConsoleLogger, Controller, Get, type INestApplication, Module } from '@nestjs/common';
import { HealthCheck, HealthCheckService, TerminusModule } from '@nestjs/terminus';
import { Test } from '@nestjs/testing';
import request from 'supertest';
import { LockHealthIndicator, LockModule, type LockModuleOptions } from '../../lib';
import { eventually } from '../support/eventually';
import { trackLockApps } from '../support/lock-app';
import { startRedis, startRedisServers, type RedisProcess } from '../support/redis-server';

/**
 * A paused node is reported down after one command timeout; 1 s leaves room for a first connection on a
 * loaded machine (a stopped server is refused at once anyway).
 */
const FAST: LockModuleOptions = { ttl: 5_000, commandTimeout: 1_000 };

describe('LockHealthIndicator', () => {
  const apps = trackLockApps();

  it('one Redis: up while it answers, down (with the reason) once it is stopped, up again after a restart', async () => {
    const redis = await startRedis();
    try {
      const app = await apps.start({ redis: redis.url, ...FAST });
      const health = app.module.get(LockHealthIndicator);
      expect(await health.isHealthy('locks')).toEqual({
        locks: expect.objectContaining({ status: 'up', store: 'redis' }),
      });

      await redis.kill();
      const down = await health.isHealthy('locks');
      expect(down.locks).toMatchObject({
        status: 'down',
        store: 'redis',
        message: expect.stringMatching(/^Lock store unavailable: ping failed on Redis/),
      });

      await redis.restart();
      // The client reconnects on its own schedule (backoff): up again once it has.
      await eventually(
        async () => (await health.isHealthy('locks')).locks.status === 'up',
        10_000,
        'up after the restart',
      );
    } finally {
      await redis.stop();
    }
  });

  it("Redlock over 3 nodes: up while a quorum answers, with each node's answer; down below a quorum", async () => {
    const nodes = await startRedisServers(3);
    try {
      const app = await apps.start({ nodes: nodes.map((node) => node.url), ...FAST });
      const health = app.module.get(LockHealthIndicator);
      const all = (await health.isHealthy()).lock;
      expect(all).toMatchObject({ status: 'up', store: 'redlock', quorum: 2 });
      expect(all.nodes?.map((node) => node.status)).toEqual(['up', 'up', 'up']);

      await nodes[1].kill();
      const two = (await health.isHealthy()).lock;
      expect(two.status).toBe('up');
      expect(two.nodes?.map((node) => [node.node, node.status])).toEqual([
        ['nodes[0]', 'up'],
        ['nodes[1]', 'down'],
        ['nodes[2]', 'up'],
      ]);
      expect(two.nodes?.[1].message).toEqual(expect.any(String));
      // Once the connection has tried again, the node's message names the cause an operator can act on, not only
      // ioredis' "Reached the max retries per request limit" (an option the module sets).
      await eventually(
        async () => /ECONNREFUSED/.test((await health.isHealthy()).lock.nodes?.[1].message ?? ''),
        5_000,
        "the down node's message naming ECONNREFUSED",
      );

      nodes[2].pause();
      try {
        const one = (await health.isHealthy()).lock;
        expect(one).toMatchObject({ status: 'down', store: 'redlock', quorum: 2 });
        expect(one.nodes?.map((node) => node.status)).toEqual(['up', 'down', 'down']);
      } finally {
        nodes[2].resume();
      }
    } finally {
      await Promise.all(nodes.map((node) => node.stop()));
    }
  });

  describe('in a real Terminus health endpoint (@nestjs/terminus 12)', () => {
    let redis: RedisProcess;
    let app: INestApplication | undefined;
    afterEach(async () => {
      await app?.close();
      await redis?.stop();
    });

    it('GET /health answers 200, then 503 naming the lock store once Redis is stopped', async () => {
      redis = await startRedis();

      @Controller('health')
      class HealthController {
        constructor(
          private readonly health: HealthCheckService,
          private readonly locks: LockHealthIndicator,
        ) {}

        @Get()
        @HealthCheck()
        check() {
          return this.health.check([() => this.locks.isHealthy('locks')]);
        }
      }

      @Module({
        imports: [TerminusModule.forRoot({ logger: false }), LockModule.forRoot({ redis: redis.url, ...FAST })],
        controllers: [HealthController],
      })
      class HealthAppModule {}

      const module = await Test.createTestingModule({ imports: [HealthAppModule] })
        .setLogger(new ConsoleLogger({ logLevels: ['fatal'] }))
        .compile();
      app = module.createNestApplication({ logger: false });
      await app.init();

      const up = await request(app.getHttpServer()).get('/health').expect(200);
      expect(up.body).toMatchObject({ status: 'ok', info: { locks: { status: 'up', store: 'redis' } } });

      await redis.kill();
      const down = await request(app.getHttpServer()).get('/health').expect(503);
      expect(down.body).toMatchObject({ status: 'error', error: { locks: { status: 'down', store: 'redis' } } });
    });
  });
});
