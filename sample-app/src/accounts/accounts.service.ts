import { Inject, Injectable } from '@nestjs/common';
import { LockService } from '../../../lib';
import { AccountNotFoundError } from '../common/bank-errors';
import { APP_CONFIG, type AppConfig } from '../config/app-config';
import { accountLockKey, type Account } from './account';
import { ACCOUNTS_REPOSITORY, type AccountsRepository } from './accounts.repository';

/** A new balance for one account; the fence is added from the caller's lock. */
export interface BalanceChange {
  readonly id: string;
  readonly balance: number;
}

/**
 * Reads and writes balances. Every write is fenced with the lock its caller holds on the account
 * (`account:<id>`), found through LockService.current(): the caller is a @Locked route handler, or runs
 * inside LockService.withLock.
 */
@Injectable()
export class AccountsService {
  constructor(
    @Inject(ACCOUNTS_REPOSITORY) private readonly repository: AccountsRepository,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly lockService: LockService,
  ) {}

  /** The account, or AccountNotFoundError. */
  async get(id: string): Promise<Account> {
    const account = await this.repository.find(id);
    if (!account) throw new AccountNotFoundError(id);
    return account;
  }

  list(): Promise<Account[]> {
    return this.repository.list();
  }

  /** Credits `amount`, opening the account on its first deposit. The caller holds `account:<id>`. */
  async deposit(id: string, amount: number): Promise<Account> {
    const balance = ((await this.repository.find(id))?.balance ?? 0) + amount;
    await this.writeBalances([{ id, balance }]);
    return { id, balance };
  }

  /**
   * Writes all the balances or none, each fenced by the caller's lock on its account: StaleFenceError when
   * that lock was lost and granted to another writer meanwhile.
   */
  async writeBalances(changes: readonly BalanceChange[]): Promise<void> {
    await this.repository.writeBalances(changes.map((change) => ({ ...change, fence: this.fenceFor(change.id) })));
  }

  /** The fencing token of the caller's lock on the account. */
  private fenceFor(id: string): number | undefined {
    const fence = this.lockService.current()?.fences[accountLockKey(id)];
    if (fence === undefined && this.config.locks) {
      // A programming error, not a client's: every path that writes a balance must lock the account first.
      throw new Error(`Balance of account ${id} written without holding the lock ${accountLockKey(id)}`);
    }
    return fence;
  }
}
