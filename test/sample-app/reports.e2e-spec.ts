import type { INestApplication } from '@nestjs/common';
import { ReportsService } from '../../sample-app/src/reports/reports.service';
import { startRedis, type RedisProcess } from '../support/redis-server';
import { accountId, bankClient, createBankApp } from './bank-app';

/** Compute once: concurrent requests for a report that is not cached share one computation. */
describe('sample app: GET /reports/:id computes once (no cache stampede)', () => {
  let redis: RedisProcess;
  const apps: INestApplication[] = [];

  beforeAll(async () => {
    redis = await startRedis();
    // Two instances sharing one Redis: the lock and the cache are shared between them too.
    for (const instance of ['instance-a', 'instance-b']) {
      apps.push(await createBankApp({ store: { kind: 'redis', url: redis.url }, instance }));
    }
  });

  afterAll(async () => {
    await Promise.all(apps.map((app) => app.close()));
    await redis?.stop();
  });

  const computations = (): number => apps.reduce((sum, app) => sum + app.get(ReportsService).computations, 0);

  it('5 concurrent requests over two instances run the computation once and get the same report', async () => {
    const [first, second] = apps.map(bankClient);
    const id = accountId('report');
    await first.deposit(id, 1_000).expect(200);
    const before = computations();

    const responses = await Promise.all(
      [first, second, first, second, first].map((client) => client.get(`/reports/${id}`)),
    );

    expect(responses.map((response) => response.status)).toEqual([200, 200, 200, 200, 200]);
    expect(computations() - before).toBe(1);
    const computationIds = new Set(responses.map((response) => response.body.computationId));
    expect(computationIds.size).toBe(1);
    expect(responses[0].body).toMatchObject({ accountId: id, balance: 1_000 });
  });

  it('a later request is served from the cache, without computing', async () => {
    const client = bankClient(apps[1]);
    const id = accountId('report-cached');
    await client.deposit(id, 10).expect(200);
    const first = await client.get(`/reports/${id}`).expect(200);
    const before = computations();

    const again = await client.get(`/reports/${id}`).expect(200);

    expect(computations()).toBe(before);
    expect(again.body.computationId).toBe(first.body.computationId);
  });

  it('the report of an account never opened is 404', async () => {
    await bankClient(apps[0]).get(`/reports/${accountId('no-report')}`).expect(404);
  });
});
