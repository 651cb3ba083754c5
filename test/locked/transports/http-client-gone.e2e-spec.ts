import { Controller, Param, Post } from '@nestjs/common';
import http from 'node:http';
import request from 'supertest';
import { LockService } from '../../../lib';
import { LockKeyNamer } from '../../../lib/keys';
import { Locked } from '../../../lib/decorators';
import { startRedis, type RedisProcess } from '../../support/redis-server';
import { waiterAsleep } from '../../support/waiters';
import { Gates, eventually } from '../helpers/gates';
import { RecordingLogger, startHttpApp, type HttpTransportApp } from '../helpers/transport-apps';

const gates = new Gates();
/** Every call that got into the handler, by key id, in order. */
const ran: string[] = [];

@Controller()
class ReportsController {
  @Post('reports/:id')
  @Locked('report:{params.id}', { wait: 10_000 })
  async rebuild(@Param('id') id: string) {
    ran.push(id);
    await gates.get(`report ${id}`).pass();
    return { rebuilt: id };
  }
}

/** Sends a POST and, once `disconnect` resolves, drops the connection without waiting for the answer. */
function postThenHangUp(baseUrl: string, path: string, disconnect: Promise<void>): void {
  const client = http.request(`${baseUrl}${path}`, { method: 'POST' });
  client.on('error', () => undefined); // the socket we destroy ourselves
  client.end();
  void disconnect.then(() => client.destroy());
}

/**
 * A @Locked HTTP request waiting for a busy key whose client disconnects stops waiting: before, Nest kept the
 * request running, so it took the lock once free and ran the handler for nobody, holding off the clients
 * still there. Real Nest apps on Express and Fastify, real Redis, real sockets.
 */
describe.each(['express', 'fastify'] as const)(
  'a waiting @Locked request whose client disconnects (%s)',
  (platform) => {
    let redis: RedisProcess;
    let app: HttpTransportApp;
    const logger = new RecordingLogger();

    beforeAll(async () => {
      redis = await startRedis();
      app = await startHttpApp(platform, redis.url, { controllers: [ReportsController] }, logger, { ttl: 10_000 });
    });
    afterAll(async () => {
      gates.openAll();
      await app?.close();
      await redis?.stop();
    });

    it('stops waiting at once: the handler never runs for it, and the next client gets the key right after the holder', async () => {
      const id = `${platform}-1`;
      const locks = app.app.get(LockService);
      const holder = request(app.server)
        .post(`/reports/${id}`)
        .then((response) => response);
      await gates.get(`report ${id}`).reached();

      let hangUp!: () => void;
      postThenHangUp(app.baseUrl, `/reports/${id}`, new Promise<void>((resolve) => (hangUp = resolve)));
      await waiterAsleep(locks, `report:${id}`);
      const mark = logger.entries.length;
      hangUp();
      // The waiter leaves the key's queue without the holder releasing anything.
      const names = [new LockKeyNamer('lock:').names(`report:${id}`)];
      await eventually(async () => !locks.store.hasWaiters(names), 5_000, 'the disconnected request stopped waiting');

      gates.get(`report ${id}`).open();
      expect((await holder).status).toBe(201);
      const next = await request(app.server).post(`/reports/${id}`);
      expect(next.status).toBe(201);
      // The holder and the next client; the one that hung up never got in (it would have, before the next).
      expect(ran.filter((entry) => entry === id)).toHaveLength(2);
      expect(logger.since(mark, 'error')).toEqual([]);
      expect(logger.since(mark, 'debug')).toContainEqual({
        level: 'debug',
        context: 'LockInterceptor',
        message:
          'Stopped waiting for "report:{params.id}": the HTTP client disconnected while the request waited for its lock',
      });
    });
  },
);
