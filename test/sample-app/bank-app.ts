import { ConsoleLogger, type INestApplication } from '@nestjs/common';
import { SchedulerRegistry } from '@nestjs/schedule';
import { Test } from '@nestjs/testing';
import request from 'supertest';
import type { App } from 'supertest/types';
import { AppModule } from '../../sample-app/src/app.module';
import type { AppConfig, StoreSetting } from '../../sample-app/src/config/app-config';
import { INTEREST_CRON_JOB } from '../../sample-app/src/interest/interest.job';

export { accountId } from './account-ids';

/** A test's settings of the sample app: the store, and optionally anything else of its AppConfig. */
export interface BankAppOptions extends Partial<AppConfig> {
  readonly store: StoreSetting;
}

/**
 * The sample app's AppModule, initialised (not listening: supertest drives its HTTP server). The interest
 * cron is stopped: a tick in the middle of a test would credit interest and change the balances it
 * checks; tests that need the job call it themselves.
 */
export async function createBankApp(options: BankAppOptions): Promise<INestApplication> {
  const config: AppConfig = { port: 0, locks: true, interestRate: 0, instance: 'test', ...options };
  const moduleRef = await Test.createTestingModule({ imports: [AppModule.forRoot(config)] })
    .setLogger(new ConsoleLogger({ logLevels: ['error', 'fatal'] }))
    .compile();
  const app = moduleRef.createNestApplication({ logger: ['error', 'fatal'] });
  await app.init();
  void app.get(SchedulerRegistry).getCronJob(INTEREST_CRON_JOB).stop();
  return app;
}

/** The HTTP calls the specs make. */
export function bankClient(app: INestApplication) {
  const server = app.getHttpServer() as App;
  return {
    deposit: (id: string, amount: unknown) => request(server).post(`/accounts/${id}/deposit`).send({ amount }),
    balance: async (id: string): Promise<number> => {
      const response = await request(server).get(`/accounts/${id}`).expect(200);
      return (response.body as { balance: number }).balance;
    },
    transfer: (body: object) => request(server).post('/transfers').send(body),
    get: (path: string) => request(server).get(path),
    post: (path: string) => request(server).post(path),
  };
}
