import type { Redis } from 'ioredis';
import type { AccountReport } from './account-report';
import type { ReportCache } from './report-cache';

const reportKey = (accountId: string): string => `bank:report:${accountId}`;

/** Reports as JSON strings under `bank:report:<id>`, expiring with PX. */
export class RedisReportCache implements ReportCache {
  constructor(private readonly redis: Redis) {}

  async get(accountId: string): Promise<AccountReport | undefined> {
    const json = await this.redis.get(reportKey(accountId));
    return json === null ? undefined : (JSON.parse(json) as AccountReport);
  }

  async set(report: AccountReport, ttlMs: number): Promise<void> {
    await this.redis.set(reportKey(report.accountId), JSON.stringify(report), 'PX', ttlMs);
  }
}
