import { Module } from '@nestjs/common';
import { AccountsModule } from '../accounts/accounts.module';
import { InterestJob } from './interest.job';

@Module({
  imports: [AccountsModule],
  providers: [InterestJob],
})
export class InterestModule {}
