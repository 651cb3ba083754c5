import { Controller, Get, Param } from '@nestjs/common';
import { AccountIdParams } from '../accounts/dto/account-id.params';
import type { AccountReport } from './account-report';
import { ReportsService } from './reports.service';

@Controller('reports')
export class ReportsController {
  constructor(private readonly reports: ReportsService) {}

  /** Locked inside the service with LockService.withLock, only when the report must be computed. */
  @Get(':id')
  find(@Param() { id }: AccountIdParams): Promise<AccountReport> {
    return this.reports.report(id);
  }
}
