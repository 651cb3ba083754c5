import { Module } from '@nestjs/common';
import { AccountsModule } from '../accounts/accounts.module';
import { LedgerAuditor } from './ledger-auditor';

@Module({
  imports: [AccountsModule],
  providers: [LedgerAuditor],
})
export class LedgerModule {}
