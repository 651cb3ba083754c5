import { DynamicModule, Module } from '@nestjs/common';
import { AccountsModule } from '../accounts/accounts.module';
import { TransfersController } from './transfers.controller';
import { TransfersService } from './transfers.service';
import { UnlockedTransfersController } from './unlocked-transfers.controller';

@Module({})
export class TransfersModule {
  /** `locks: false` (LOCKS=off) swaps in the unlocked twin of the controller, for the race demo. */
  static register({ locks }: { locks: boolean }): DynamicModule {
    return {
      module: TransfersModule,
      imports: [AccountsModule],
      controllers: [locks ? TransfersController : UnlockedTransfersController],
      providers: [TransfersService],
    };
  }
}
