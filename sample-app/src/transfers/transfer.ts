import type { Account } from '../accounts/account';

/** What POST /transfers returns: both accounts after the transfer. */
export interface TransferResult {
  readonly from: Account;
  readonly to: Account;
  readonly amount: number;
}
