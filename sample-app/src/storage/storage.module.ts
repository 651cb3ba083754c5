import { Global, Inject, Module, type OnApplicationShutdown } from '@nestjs/common';
import { Redis } from 'ioredis';
import { ACCOUNTS_REPOSITORY } from '../accounts/accounts.repository';
import { MemoryAccountsRepository } from '../accounts/memory-accounts.repository';
import { RedisAccountsRepository } from '../accounts/redis-accounts.repository';
import { BACKEND, dataRedisUrl, type Backend } from '../config/backend';
import { MemoryReportCache } from '../reports/memory-report-cache';
import { REPORT_CACHE } from '../reports/report-cache';
import { RedisReportCache } from '../reports/redis-report-cache';

/** Injection token of the app's own Redis client (accounts, report cache), null in the in-process mode. */
export const BANK_REDIS = 'BANK:REDIS';

/**
 * The app's data: one interface per kind of data, its Redis or in-process implementation chosen here from
 * the Backend (the way @nestjs/throttler picks its storage), so nothing else knows which one runs.
 * The lock library opens its own connections; this client is the app's, and closed by it.
 */
@Global()
@Module({
  providers: [
    {
      provide: BANK_REDIS,
      inject: [BACKEND],
      useFactory: (backend: Backend): Redis | null => {
        const url = dataRedisUrl(backend);
        // A few retries per command, so a request fails (500) rather than hangs while Redis is down.
        return url === undefined ? null : new Redis(url, { maxRetriesPerRequest: 2, connectTimeout: 2_000 });
      },
    },
    {
      provide: ACCOUNTS_REPOSITORY,
      inject: [BANK_REDIS],
      useFactory: (redis: Redis | null) =>
        redis ? new RedisAccountsRepository(redis) : new MemoryAccountsRepository(),
    },
    {
      provide: REPORT_CACHE,
      inject: [BANK_REDIS],
      useFactory: (redis: Redis | null) => (redis ? new RedisReportCache(redis) : new MemoryReportCache()),
    },
  ],
  exports: [ACCOUNTS_REPOSITORY, REPORT_CACHE],
})
export class StorageModule implements OnApplicationShutdown {
  constructor(@Inject(BANK_REDIS) private readonly redis: Redis | null) {}

  onApplicationShutdown(): void {
    this.redis?.disconnect();
  }
}
