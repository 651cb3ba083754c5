import { Injectable } from '@nestjs/common';
import { AccountsService } from '../accounts/accounts.service';
import { InsufficientFundsError } from '../common/bank-errors';
import type { CreateTransferDto } from './dto/create-transfer.dto';
import type { TransferResult } from './transfer';

/**
 * Moves money between two accounts: the classic read-modify-write of the Redis `transfer_funds` example.
 * It reads both balances, checks the source, and writes both, with Redis round trips in between: run
 * concurrently without a lock, two transfers read the same balance and one update is lost (or money is
 * created, or a balance goes negative). The caller holds the locks of both accounts.
 */
@Injectable()
export class TransfersService {
  constructor(private readonly accounts: AccountsService) {}

  async transfer({ from, to, amount }: CreateTransferDto): Promise<TransferResult> {
    const [source, target] = await Promise.all([this.accounts.get(from), this.accounts.get(to)]);
    if (source.balance < amount) throw new InsufficientFundsError(from, source.balance, amount);
    const debited = { id: from, balance: source.balance - amount };
    const credited = { id: to, balance: target.balance + amount };
    // Both or neither: a refused fence on either account leaves both balances as they were.
    await this.accounts.writeBalances([debited, credited]);
    return { from: debited, to: credited, amount };
  }
}
