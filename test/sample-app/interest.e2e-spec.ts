import type { INestApplication } from '@nestjs/common';
import { SchedulerRegistry } from '@nestjs/schedule';
import { LockService } from '../../lib';
import { InterestJob, INTEREST_CRON_JOB } from '../../sample-app/src/interest/interest.job';
import { startRedis, type RedisProcess } from '../support/redis-server';
import { accountId, bankClient, createBankApp } from './bank-app';

/** One runner per cluster: the interest job of several instances runs on one of them per tick. */
describe('sample app: the scheduled interest job', () => {
  let redis: RedisProcess;
  const apps: INestApplication[] = [];

  beforeAll(async () => {
    redis = await startRedis();
    for (const instance of ['instance-a', 'instance-b', 'instance-c']) {
      apps.push(await createBankApp({ store: { kind: 'redis', url: redis.url }, instance, interestRate: 0.1 }));
    }
  });

  afterAll(async () => {
    await Promise.all(apps.map((app) => app.close()));
    await redis?.stop();
  });

  it('is scheduled every 10 s on each instance', () => {
    for (const app of apps) {
      expect(app.get(SchedulerRegistry).getCronJob(INTEREST_CRON_JOB).cronTime.source).toBe('*/10 * * * * *');
    }
  });

  // First: after a run, job:interest stays held for minHold (next test).
  it('skips while another instance holds job:interest', async () => {
    const client = bankClient(apps[1]);
    const id = accountId('interest-held');
    await client.deposit(id, 1_000).expect(200);
    const held = await apps[0].get(LockService).acquire('job:interest');
    try {
      await expect(apps[1].get(InterestJob).applyInterest()).resolves.toBeUndefined();
    } finally {
      await held.release();
    }
    expect(await client.balance(id)).toBe(1_000);
  });
  it('fired on every instance at once, runs on one: the others skip, and interest is credited once', async () => {
    const client = bankClient(apps[0]);
    const [rich, poor] = [accountId('interest'), accountId('interest')];
    await client.deposit(rich, 1_000).expect(200);
    await client.deposit(poor, 20).expect(200);

    const runs = await Promise.all(apps.map((app) => app.get(InterestJob).applyInterest()));

    const ran = runs.filter((run) => run !== undefined);
    expect(ran).toHaveLength(1);
    expect(['instance-a', 'instance-b', 'instance-c']).toContain(ran[0]?.instance);
    expect(await client.balance(rich)).toBe(1_100);
    expect(await client.balance(poor)).toBe(22);

    // minHold: a run that finished in milliseconds still keeps the tick's lock, so an instance whose timer
    // fired late skips instead of crediting the interest a second time.
    await expect(apps[2].get(InterestJob).applyInterest()).resolves.toBeUndefined();
    expect(await client.balance(rich)).toBe(1_100);
  });
});
