import type { Account } from './account';

/** Injection token of the AccountsRepository (Redis or in-process, chosen from the Backend). */
export const ACCOUNTS_REPOSITORY = 'BANK:ACCOUNTS_REPOSITORY';

/** One balance to write, carrying the fencing token of the account's lock held by the writer. */
export interface BalanceWrite {
  readonly id: string;
  readonly balance: number;
  /** undefined only with LOCKS=off (the race demo's unlocked run): written without the fence check. */
  readonly fence: number | undefined;
}

/**
 * Where balances live. Reads are plain; writes are fenced: each account keeps the highest fence a write
 * carried, and a write whose fence is lower (a holder whose lock expired and was granted to someone
 * else since) is refused, so a paused or partitioned holder cannot overwrite a newer balance.
 */
export interface AccountsRepository {
  find(id: string): Promise<Account | undefined>;
  /** Every account, in no particular order. */
  list(): Promise<Account[]>;
  /**
   * Writes every balance or none (one transfer debits and credits together). Rejects with
   * StaleFenceError when a write's fence is lower than the last fence stored for its account; a fence
   * equal to it is the same lock writing again and is accepted.
   */
  writeBalances(writes: readonly BalanceWrite[]): Promise<void>;
}
