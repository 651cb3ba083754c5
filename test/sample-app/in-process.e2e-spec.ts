import type { INestApplication } from '@nestjs/common';
import { ConsoleLogger } from '@nestjs/common';
import { SchedulerRegistry } from '@nestjs/schedule';
import { Test } from '@nestjs/testing';
import { LockService } from '../../lib';
import { accountLockKey } from '../../sample-app/src/accounts/account';
import { AccountsService } from '../../sample-app/src/accounts/accounts.service';
import { AppModule } from '../../sample-app/src/app.module';
import { StaleFenceError } from '../../sample-app/src/common/bank-errors';
import { INTEREST_CRON_JOB } from '../../sample-app/src/interest/interest.job';
import { ReportsService } from '../../sample-app/src/reports/reports.service';
import { bankClient } from './bank-app';

/**
 * The sample app booted from the environment as `npm run sample` does, forced onto the in-process store
 * (LOCK_STORE=memory, no REDIS_URL): the same endpoints and guarantees inside one process.
 */
describe('sample app in the in-process mode (LOCK_STORE=memory)', () => {
  const savedEnv = { ...process.env };
  let app: INestApplication;
  let client: ReturnType<typeof bankClient>;

  beforeAll(async () => {
    delete process.env.REDIS_URL;
    delete process.env.REDIS_NODES;
    process.env.LOCK_STORE = 'memory';
    process.env.INTEREST_RATE = '0';
    const moduleRef = await Test.createTestingModule({ imports: [AppModule.forRoot()] })
      .setLogger(new ConsoleLogger({ logLevels: ['error', 'fatal'] }))
      .compile();
    app = moduleRef.createNestApplication({ logger: ['error', 'fatal'] });
    await app.init();
    void app.get(SchedulerRegistry).getCronJob(INTEREST_CRON_JOB).stop();
    client = bankClient(app);
  });

  afterAll(async () => {
    await app?.close();
    process.env = savedEnv;
  });

  it('GET /health answers 200 with store "memory"', async () => {
    expect((await client.get('/health').expect(200)).body).toMatchObject({
      status: 'ok',
      info: { locks: { status: 'up', store: 'memory' } },
    });
  });

  it('serves deposits, transfers (201), overdrafts (422) and balances', async () => {
    await client.deposit('alice', 1_000).expect(200);
    await client.deposit('bob', 100).expect(200);
    await client.transfer({ from: 'alice', to: 'bob', amount: 400 }).expect(201);
    const overdraft = await client.transfer({ from: 'bob', to: 'alice', amount: 501 }).expect(422);
    expect(overdraft.body.message).toMatch(/Insufficient funds: account bob has 500/);
    await client.transfer({ from: 'bob', to: 'bob', amount: 1 }).expect(400);
    expect(await client.balance('alice')).toBe(600);
    expect(await client.balance('bob')).toBe(500);
  });

  it('concurrent transfers keep the total', async () => {
    const ids = ['m1', 'm2', 'm3', 'm4'];
    for (const id of ids) await client.deposit(id, 500).expect(200);
    const responses = await Promise.all(
      Array.from({ length: 100 }, (_, index) => {
        // An offset of 1 to 3: never the source account.
        const [from, to] = [ids[index % 4], ids[(index + 1 + (index % 3)) % 4]];
        return client.transfer({ from, to, amount: 20 + (index % 7) * 30 });
      }),
    );
    expect(responses.filter((response) => ![201, 409, 422].includes(response.status))).toEqual([]);
    const balances = await Promise.all(ids.map((id) => client.balance(id)));
    expect(balances.reduce((sum, balance) => sum + balance, 0)).toBe(2_000);
    expect(balances.filter((balance) => balance < 0)).toEqual([]);
  });

  it('refuses a write fenced by an older lock', async () => {
    await client.deposit('fenced', 10).expect(200);
    const locks = app.get(LockService);
    const older = await locks.acquire(accountLockKey('fenced'), { ttl: 200, autoExtend: false });
    await new Promise((resolve) => setTimeout(resolve, 300));
    await client.deposit('fenced', 1).expect(200);
    await expect(locks.runWithLock(older, () => app.get(AccountsService).deposit('fenced', 100))).rejects.toThrow(
      StaleFenceError,
    );
    expect(await client.balance('fenced')).toBe(11);
    await older.release();
  });

  it('computes a report once for 5 concurrent requests', async () => {
    await client.deposit('reported', 70).expect(200);
    const before = app.get(ReportsService).computations;
    const responses = await Promise.all(Array.from({ length: 5 }, () => client.get('/reports/reported')));
    expect(responses.map((response) => response.status)).toEqual([200, 200, 200, 200, 200]);
    expect(app.get(ReportsService).computations - before).toBe(1);
    expect(new Set(responses.map((response) => response.body.computationId)).size).toBe(1);
  });
});
