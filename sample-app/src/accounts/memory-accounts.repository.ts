import { StaleFenceError } from '../common/bank-errors';
import type { Account } from './account';
import type { AccountsRepository, BalanceWrite } from './accounts.repository';

interface StoredAccount {
  balance: number;
  /** The highest fence a write to this account carried; 0 before any fenced write. */
  lastFence: number;
}

/**
 * Accounts in a Map of this process (the in-process mode). writeBalances runs its check and its writes
 * without an await in between, so it is as atomic here as the Lua script is in Redis.
 */
export class MemoryAccountsRepository implements AccountsRepository {
  private readonly accounts = new Map<string, StoredAccount>();

  async find(id: string): Promise<Account | undefined> {
    const stored = this.accounts.get(id);
    return stored && { id, balance: stored.balance };
  }

  async list(): Promise<Account[]> {
    return [...this.accounts].map(([id, stored]) => ({ id, balance: stored.balance }));
  }

  async writeBalances(writes: readonly BalanceWrite[]): Promise<void> {
    for (const write of writes) {
      const lastFence = this.accounts.get(write.id)?.lastFence ?? 0;
      if (write.fence !== undefined && write.fence < lastFence) {
        throw new StaleFenceError(write.id, write.fence, lastFence);
      }
    }
    for (const write of writes) {
      const stored = this.accounts.get(write.id) ?? { balance: 0, lastFence: 0 };
      stored.balance = write.balance;
      if (write.fence !== undefined) stored.lastFence = write.fence;
      this.accounts.set(write.id, stored);
    }
  }
}
