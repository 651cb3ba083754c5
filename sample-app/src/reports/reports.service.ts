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

/** The read-write lock of an account's cached report: readers of the cache share it, a rebuild is its writer. */
export function reportLockKey(accountId: string): string {
  return `report:${accountId}`;
}

/**
 * The report cache under a read-write lock, `report:<id>`:
 * - Readers read the cache under `mode: 'read'`: any number together, on every instance.
 * - Compute once (no cache stampede): on a miss, a reader takes the lock for writing; concurrent requests
 *   (of every instance) queue there; the first computes and caches, the others find the cached report when
 *   they get the lock: the re-check after acquiring is what makes it once.
 * - A rebuild (POST /reports/:id/rebuild, `@Locked(..., { mode: 'write' })`) computes the report again and
 *   replaces the cached one as the writer: it waits for the readers inside, and readers that come meanwhile
 *   wait for it (new readers queue behind a waiting writer too) and get the rebuilt report, never the one
 *   being replaced.
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
    const cached = await this.lockService.withLock(reportLockKey(accountId), () => this.cache.get(accountId), {
      mode: 'read',
      // Long enough to wait for a rebuild in progress.
      wait: 10_000,
    });
    if (cached) return cached;
    return this.lockService.withLock(
      reportLockKey(accountId),
      async () => {
        // Whoever held the lock before us may have computed it while we waited.
        const computedMeanwhile = await this.cache.get(accountId);
        if (computedMeanwhile) return computedMeanwhile;
        const report = await this.compute(accountId);
        await this.cache.set(report, REPORT_TTL_MS);
        return report;
      },
      // Long enough to wait for one computation in progress.
      { mode: 'write', wait: 10_000 },
    );
  }

  /**
   * Computes the account's report again and replaces the cached one (out of date: that is why it is
   * rebuilt). The caller holds `report:<id>` for writing, so no reader gets the old one meanwhile.
   */
  async rebuild(accountId: string): Promise<AccountReport> {
    const report = await this.compute(accountId);
    await this.cache.set(report, REPORT_TTL_MS);
    return report;
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
