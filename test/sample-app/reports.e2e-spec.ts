import type { INestApplication } from '@nestjs/common';
import { ReportsService } from '../../sample-app/src/reports/reports.service';
import { eventually } from '../support/eventually';
import { startRedis, type RedisProcess } from '../support/redis-server';
import { accountId, bankClient, createBankApp } from './bank-app';

/**
 * Compute once: concurrent requests for a report that is not cached share one computation; a rebuild
 * (the writer of the report's read-write lock) keeps its readers waiting for the new report.
 */
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

  it('a rebuild is the writer of report:<id>: readers asking meanwhile (two instances) wait and all get the rebuilt report', async () => {
    const [first, second] = apps.map(bankClient);
    const id = accountId('report-rebuild');
    await first.deposit(id, 500).expect(200);
    const old = await first.get(`/reports/${id}`).expect(200);
    // The cached report is now out of date: a rebuild computes it again and replaces it.
    await first.deposit(id, 250).expect(200);
    const before = computations();

    const rebuild = first.post(`/reports/${id}/rebuild`).then((response) => response);
    // The rebuild is computing (500 ms), so it holds the write lock: the readers come now.
    await eventually(async () => computations() > before, 5_000, 'the rebuild to start computing');
    const readers = await Promise.all([first, second, first, second].map((client) => client.get(`/reports/${id}`)));
    const rebuilt = await rebuild;

    expect(rebuilt.status).toBe(200);
    expect(rebuilt.body).toMatchObject({ accountId: id, balance: 750 });
    expect(rebuilt.body.computationId).not.toBe(old.body.computationId);
    // Without the read lock they would get the old report, still cached while the rebuild computes.
    expect(readers.map((response) => response.status)).toEqual([200, 200, 200, 200]);
    expect(readers.map((response) => response.body.computationId)).toEqual(Array(4).fill(rebuilt.body.computationId));
    expect(computations() - before).toBe(1);
  });

  it('the report of an account never opened is 404', async () => {
    await bankClient(apps[0])
      .get(`/reports/${accountId('no-report')}`)
      .expect(404);
  });
});
