import { Controller, Get } from '@nestjs/common';
import { HealthCheck, HealthCheckService } from '@nestjs/terminus';
import { LockHealthIndicator } from '../../../lib';

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
  ) {}

  @Get()
  @HealthCheck()
  check() {
    return this.health.check([() => this.locks.isHealthy('locks')]);
  }
}
