import { Inject, Injectable, Logger } from '@nestjs/common';
import { Leader, type LeaderTerm } from '../../../lib';
import { AccountsService } from '../accounts/accounts.service';
import { APP_CONFIG, type AppConfig } from '../config/app-config';

/** The leadership's name: one auditor for the whole bank, whichever instance it runs on. */
export const LEDGER_AUDITOR = 'ledger-auditor';

/** How often the auditor sums the ledger: LEDGER_AUDIT_MS, default every 5 s. */
export const LEDGER_AUDIT_MS = readPeriod(process.env.LEDGER_AUDIT_MS, 5_000);

/**
 * The auditor's lease: a leader that crashes or freezes is replaced about this long after its last renewal.
 * A graceful shutdown hands over at once, whatever its length.
 */
export const LEDGER_AUDITOR_TTL_MS = 2_000;

function readPeriod(value: string | undefined, fallback: number): number {
  if (value === undefined || value === '') return fallback;
  const parsed = Number(value);
  if (!Number.isFinite(parsed) || parsed < 10) throw new Error(`LEDGER_AUDIT_MS must be at least 10 ms, got ${value}`);
  return parsed;
}

/**
 * A job that must run on one instance at a time, for as long as the app runs: the ledger audit, a stream of
 * totals that would be duplicated (and its alerts sent twice) with two auditors. Not a @Cron + @Locked job:
 * that runs once per tick on whichever instance's timer fires first, while this one keeps its state (the last
 * total) on the instance that leads, and another instance takes over only when the leader stops, dies or
 * freezes past its lease.
 */
@Injectable()
export class LedgerAuditor {
  private readonly logger = new Logger(LedgerAuditor.name);

  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly accounts: AccountsService,
  ) {}

  /**
   * Runs while this instance leads: from bootstrap, or once the previous leader is gone. `term.signal` aborts
   * when the leadership ends (lost, or the app shutting down): the loop reads it before each audit and returns.
   */
  @Leader(LEDGER_AUDITOR, { ttl: LEDGER_AUDITOR_TTL_MS })
  async audit(term: LeaderTerm): Promise<void> {
    this.logger.log(`Ledger auditor is instance ${this.config.instance} (term ${term.term})`);
    let previous: number | undefined;
    while (!term.signal.aborted) {
      const accounts = await this.accounts.list();
      // Read again after the await: the leadership may have ended while the ledger was read.
      if (term.signal.aborted) break;
      const total = accounts.reduce((sum, account) => sum + account.balance, 0);
      const change =
        previous === undefined ? '' : `, ${total - previous >= 0 ? '+' : ''}${total - previous} since the last audit`;
      this.logger.log(`Ledger audit (term ${term.term}): ${total} cents over ${accounts.length} accounts${change}`);
      previous = total;
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, LEDGER_AUDIT_MS);
        term.signal.addEventListener('abort', () => (clearTimeout(timer), resolve()), { once: true });
      });
    }
    this.logger.log(`Ledger auditor on instance ${this.config.instance} stops (term ${term.term})`);
  }
}
