import { Body, Controller, Get, HttpCode, HttpStatus, Param, Post } from '@nestjs/common';
import { Locked } from '../../../lib';
import type { Account } from './account';
import { AccountsService } from './accounts.service';
import { AccountIdParams } from './dto/account-id.params';
import { DepositDto } from './dto/deposit.dto';

@Controller('accounts')
export class AccountsController {
  constructor(private readonly accounts: AccountsService) {}

  /**
   * A deposit is a read-modify-write of the balance, so it holds the account's lock, the same lock a
   * transfer takes: `{params.id}` is read from the route. The write is fenced by this lock.
   */
  @Post(':id/deposit')
  @HttpCode(HttpStatus.OK)
  @Locked('account:{params.id}')
  deposit(@Param() { id }: AccountIdParams, @Body() { amount }: DepositDto): Promise<Account> {
    return this.accounts.deposit(id, amount);
  }

  /** A plain read: no lock. */
  @Get(':id')
  find(@Param() { id }: AccountIdParams): Promise<Account> {
    return this.accounts.get(id);
  }
}
