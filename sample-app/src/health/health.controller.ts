import { Controller, Get } from '@nestjs/common';
import { HealthCheck, HealthCheckService } from '@nestjs/terminus';
import { LockHealthIndicator, LockService, type LeaderInfo } from '../../../lib';
import { LEDGER_AUDITOR } from '../ledger/ledger-auditor';

/**
 * Terminus health check of the lock store (the library's LockHealthIndicator): 200 with
 * `{ status: 'ok', info: { locks: { status: 'up', store, … } } }` while it answers, 503 with the same shape
 * under `error` once it does not (Redlock: while a quorum of nodes answers, with each node's answer).
 */
@Controller('health')
export class HealthController {
  constructor(
    private readonly health: HealthCheckService,
    private readonly locks: LockHealthIndicator,
    private readonly lockService: LockService,
  ) {}

  @Get()
  @HealthCheck()
  check() {
    return this.health.check([() => this.locks.isHealthy('locks')]);
  }

  /** Which instance runs the ledger auditor now (its term and lease), or null while nobody does. */
  @Get('leader')
  leader(): Promise<LeaderInfo | null> {
    return this.lockService.leader(LEDGER_AUDITOR);
  }
}
