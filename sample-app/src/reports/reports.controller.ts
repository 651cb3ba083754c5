import { Controller, Get, HttpCode, HttpStatus, Param, Post } from '@nestjs/common';
import { Locked } from '../../../lib';
import { AccountIdParams } from '../accounts/dto/account-id.params';
import type { AccountReport } from './account-report';
import { ReportsService } from './reports.service';

@Controller('reports')
export class ReportsController {
  constructor(private readonly reports: ReportsService) {}

  /** Locked inside the service with LockService.withLock: for reading, and for writing on a miss. */
  @Get(':id')
  find(@Param() { id }: AccountIdParams): Promise<AccountReport> {
    return this.reports.report(id);
  }

  /**
   * Rebuilds the report as the writer of `report:<id>`: it waits for the readers inside to finish, and the
   * readers that come meanwhile wait for the rebuilt report.
   */
  @Post(':id/rebuild')
  @HttpCode(HttpStatus.OK)
  @Locked('report:{params.id}', { mode: 'write', wait: 10_000 })
  rebuild(@Param() { id }: AccountIdParams): Promise<AccountReport> {
    return this.reports.rebuild(id);
  }
}
