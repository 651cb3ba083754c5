import { Body, Controller, Logger, type OnModuleInit, Post } from '@nestjs/common';
import { CreateTransferDto } from './dto/create-transfer.dto';
import type { TransferResult } from './transfer';
import { TransfersService } from './transfers.service';

/**
 * LOCKS=off only (the race demo's unlocked run): the same route as TransfersController, without @Locked,
 * to show the damage the lock prevents. Never register it in a real app.
 */
@Controller('transfers')
export class UnlockedTransfersController implements OnModuleInit {
  private readonly logger = new Logger(UnlockedTransfersController.name);

  constructor(private readonly transfers: TransfersService) {}

  onModuleInit(): void {
    this.logger.warn('LOCKS=off: POST /transfers runs WITHOUT locks (race demo only): balances will be corrupted');
  }

  @Post()
  create(@Body() transfer: CreateTransferDto): Promise<TransferResult> {
    return this.transfers.transfer(transfer);
  }
}
