import type { AccountReport } from './account-report';

/** Injection token of the ReportCache (Redis or in-process, chosen from the Backend). */
export const REPORT_CACHE = 'BANK:REPORT_CACHE';

/** Computed reports, shared by every instance when on Redis; an entry disappears after its ttl. */
export interface ReportCache {
  get(accountId: string): Promise<AccountReport | undefined>;
  set(report: AccountReport, ttlMs: number): Promise<void>;
}
