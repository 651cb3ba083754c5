import { Body, Controller, Post } from '@nestjs/common';
import { Locked } from '../../../lib';
import { CreateTransferDto } from './dto/create-transfer.dto';
import type { TransferResult } from './transfer';
import { TransfersService } from './transfers.service';

@Controller('transfers')
export class TransfersController {
  constructor(private readonly transfers: TransfersService) {}

  /**
   * One @Locked, two keys: both accounts are locked all-or-none (no deadlock between A→B and B→A), for
   * up to 5 s of waiting behind other transfers before answering 409 with Retry-After.
   *
   * Nest runs interceptors before pipes, so the keys are built from the raw body: a missing or non-string
   * `from`/`to` is refused with 400 by the lock (InvalidLockKeyError) before ValidationPipe sees the body;
   * every other bad body gets ValidationPipe's 400.
   */
  @Post()
  @Locked(['account:{body.from}', 'account:{body.to}'], { wait: 5_000 })
  create(@Body() transfer: CreateTransferDto): Promise<TransferResult> {
    return this.transfers.transfer(transfer);
  }
}
