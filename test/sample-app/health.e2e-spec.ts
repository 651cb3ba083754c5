import type { INestApplication } from '@nestjs/common';
import { startRedis, type RedisProcess } from '../support/redis-server';
import { bankClient, createBankApp } from './bank-app';

/** GET /health follows the lock store: 200 while it answers, 503 once it does not. */
describe('sample app: GET /health', () => {
  let redis: RedisProcess;
  let app: INestApplication;

  beforeAll(async () => {
    redis = await startRedis();
    app = await createBankApp({ store: { kind: 'redis', url: redis.url } });
  });

  afterAll(async () => {
    await app?.close();
    await redis?.stop();
  });

  it('is 200 while Redis answers, 503 (naming the store) once it is down, 200 again when it is back', async () => {
    const client = bankClient(app);
    expect((await client.get('/health').expect(200)).body).toMatchObject({
      status: 'ok',
      info: { locks: { status: 'up', store: 'redis' } },
    });

    redis.pause();
    try {
      const down = await client.get('/health').timeout(10_000).expect(503);
      expect(down.body).toMatchObject({ status: 'error', error: { locks: { status: 'down', store: 'redis' } } });
      expect(down.body.error.locks.message).toEqual(expect.any(String));
    } finally {
      redis.resume();
    }

    await client.get('/health').expect(200);
  });
});
