import type { AccountReport } from './account-report';
import type { ReportCache } from './report-cache';

/** Reports in a Map of this process (the in-process mode); an expired entry is dropped when read. */
export class MemoryReportCache implements ReportCache {
  private readonly entries = new Map<string, { report: AccountReport; expiresAt: number }>();

  async get(accountId: string): Promise<AccountReport | undefined> {
    const entry = this.entries.get(accountId);
    if (entry && entry.expiresAt <= performance.now()) this.entries.delete(accountId);
    return entry && entry.expiresAt > performance.now() ? entry.report : undefined;
  }

  async set(report: AccountReport, ttlMs: number): Promise<void> {
    this.entries.set(report.accountId, { report, expiresAt: performance.now() + ttlMs });
  }
}
