import { Inject, Injectable, Logger } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { LockService } from '../../../lib';
import { AccountsService } from '../accounts/accounts.service';
import { APP_CONFIG, type AppConfig } from '../config/app-config';
import type { AccountReport } from './account-report';
import { REPORT_CACHE, type ReportCache } from './report-cache';

/** How long the computation takes: it stands for a slow query or an external call. */
export const REPORT_COMPUTATION_MS = 500;
/** How long a computed report is served from the cache. */
export const REPORT_TTL_MS = 30_000;

/**
 * Compute once (no cache stampede): when the report is not cached, concurrent requests (of every
 * instance) queue on the lock `report:<id>`; the first computes and caches, the others find the cached
 * report when they get the lock: the re-check after acquiring is what makes it once.
 */
@Injectable()
export class ReportsService {
  private readonly logger = new Logger(ReportsService.name);
  private computed = 0;

  constructor(
    @Inject(REPORT_CACHE) private readonly cache: ReportCache,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly accounts: AccountsService,
    private readonly lockService: LockService,
  ) {}

  /** How many reports this instance computed (rather than read from the cache). */
  get computations(): number {
    return this.computed;
  }

  async report(accountId: string): Promise<AccountReport> {
    const cached = await this.cache.get(accountId);
    if (cached) return cached;
    return this.lockService.withLock(
      `report:${accountId}`,
      async () => {
        // Whoever held the lock before us may have computed it while we waited.
        const computedMeanwhile = await this.cache.get(accountId);
        if (computedMeanwhile) return computedMeanwhile;
        const report = await this.compute(accountId);
        await this.cache.set(report, REPORT_TTL_MS);
        return report;
      },
      // Long enough to wait for one computation in progress.
      { wait: 10_000 },
    );
  }

  private async compute(accountId: string): Promise<AccountReport> {
    const account = await this.accounts.get(accountId);
    this.computed++;
    this.logger.log(`Computing the report of account ${accountId} (${REPORT_COMPUTATION_MS} ms)`);
    await sleep(REPORT_COMPUTATION_MS);
    const projectedBalance = Math.floor(account.balance * (1 + this.config.interestRate) ** 12);
    return {
      accountId,
      balance: account.balance,
      projectedBalance,
      computedAt: new Date().toISOString(),
      computedBy: this.config.instance,
      computationId: randomUUID(),
    };
  }
}
