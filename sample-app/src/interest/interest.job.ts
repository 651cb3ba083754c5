import { Inject, Injectable, Logger } from '@nestjs/common';
import { Cron, CronExpression } from '@nestjs/schedule';
import { LockService, Locked } from '../../../lib';
import { accountLockKey } from '../accounts/account';
import { AccountsService } from '../accounts/accounts.service';
import { APP_CONFIG, type AppConfig } from '../config/app-config';

/** Name of the cron job in SchedulerRegistry. */
export const INTEREST_CRON_JOB = 'interest';

/** When the job runs: INTEREST_CRON (a 6-field cron expression, read at startup), default every 10 s. */
export const INTEREST_SCHEDULE = process.env.INTEREST_CRON || CronExpression.EVERY_10_SECONDS;

/**
 * How long `job:interest` stays held after a run's grant, however short the run (minHold, ShedLock's
 * lockAtLeastFor). Every instance's timer fires at the same tick, but not at the same instant (a busy
 * process fires late): a run that released at once would let a late instance take the lock and credit the
 * interest twice in one tick. A bit less than the period, so the next tick finds it free.
 * INTEREST_MIN_HOLD_MS overrides it (the jobs demo runs every 2 s with 1.5 s).
 */
export const INTEREST_MIN_HOLD_MS = readMinHold(process.env.INTEREST_MIN_HOLD_MS, 8_000);

/**
 * ShedLock's lockAtMostFor: a run that hangs keeps the lock (auto-extended) at most this long, so a stuck
 * instance cannot block the job forever.
 */
export const INTEREST_MAX_HOLD_MS = 60_000;

function readMinHold(value: string | undefined, fallback: number): number {
  if (value === undefined || value === '') return fallback;
  const parsed = Number(value);
  if (!Number.isFinite(parsed) || parsed < 0)
    throw new Error(`INTEREST_MIN_HOLD_MS must be a number of ms, got ${value}`);
  return parsed;
}

export interface InterestRun {
  readonly instance: string;
  readonly accounts: number;
  /** Total credited, in cents. */
  readonly credited: number;
}

/** One runner per cluster: every instance schedules the job, one runs it per tick, the others skip. */
@Injectable()
export class InterestJob {
  private readonly logger = new Logger(InterestJob.name);

  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly accounts: AccountsService,
    private readonly lockService: LockService,
  ) {}

  /**
   * The one-line recipe for a job that runs once per tick across instances: `wait: 0` makes one attempt;
   * `onBusy: 'skip'`: when another instance holds the lock, this call does not run and resolves undefined;
   * `minHold` keeps the lock past a short run so that late instances still find it busy. Each account is
   * then credited under its own lock, like a deposit, so the job and the transfers never overwrite each
   * other's balance.
   */
  @Cron(INTEREST_SCHEDULE, { name: INTEREST_CRON_JOB })
  @Locked('job:interest', { wait: 0, onBusy: 'skip', minHold: INTEREST_MIN_HOLD_MS, maxHold: INTEREST_MAX_HOLD_MS })
  async applyInterest(): Promise<InterestRun> {
    let accounts = 0;
    let credited = 0;
    if (this.config.interestRate > 0) {
      for (const { id } of await this.accounts.list()) {
        const interest = await this.lockService.withLock(accountLockKey(id), async () => {
          const { balance } = await this.accounts.get(id);
          const amount = Math.floor(balance * this.config.interestRate);
          if (amount > 0) await this.accounts.writeBalances([{ id, balance: balance + amount }]);
          return amount;
        });
        accounts++;
        credited += interest;
      }
    }
    this.logger.log(
      `Interest run by instance ${this.config.instance}: ${credited} cents credited to ${accounts} accounts ` +
        `(rate ${this.config.interestRate})`,
    );
    return { instance: this.config.instance, accounts, credited };
  }
}
