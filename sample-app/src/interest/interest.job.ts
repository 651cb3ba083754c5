import { Inject, Injectable, Logger } from '@nestjs/common';
import { Cron, CronExpression } from '@nestjs/schedule';
import { setTimeout as sleep } from 'node:timers/promises';
import { LockService, Locked } from '../../../lib';
import { accountLockKey } from '../accounts/account';
import { AccountsService } from '../accounts/accounts.service';
import { APP_CONFIG, type AppConfig } from '../config/app-config';

/** Name of the cron job in SchedulerRegistry. */
export const INTEREST_CRON_JOB = 'interest';

/**
 * The shortest time a run keeps `job:interest`. Every instance's timer fires at the same tick, but not at
 * the same instant (a busy process fires late): a run that released at once would let a late instance
 * take the lock and credit the interest twice in one tick. Holding it for a part of the period makes
 * the late ones find it busy and skip.
 */
export const INTEREST_MIN_HOLD_MS = 2_000;

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
   * `wait: 0` makes one attempt; `onBusy: 'skip'`: when another instance holds the lock, this call does not
   * run and resolves undefined. Each account is then credited under its own lock, like a deposit, so the
   * job and the transfers never overwrite each other's balance.
   */
  @Cron(CronExpression.EVERY_10_SECONDS, { name: INTEREST_CRON_JOB })
  @Locked('job:interest', { wait: 0, onBusy: 'skip' })
  async applyInterest(): Promise<InterestRun> {
    const startedAt = performance.now();
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
    await sleep(Math.max(0, INTEREST_MIN_HOLD_MS - (performance.now() - startedAt)));
    return { instance: this.config.instance, accounts, credited };
  }
}
