import { Controller, Get, Inject, ServiceUnavailableException } from '@nestjs/common';
import { LockService } from '../../../lib';
import { BACKEND, type Backend } from '../config/backend';

export interface Health {
  readonly status: 'ok';
  /** Where the locks live: 'redis', 'redlock' or 'memory'. */
  readonly store: Backend['kind'];
}

@Controller('health')
export class HealthController {
  constructor(
    private readonly lockService: LockService,
    @Inject(BACKEND) private readonly backend: Backend,
  ) {}

  /** 200 when the lock store answers a read (isLocked), 503 when it does not (LockUnavailableError). */
  @Get()
  async check(): Promise<Health> {
    try {
      await this.lockService.isLocked('health:probe');
    } catch (error) {
      throw new ServiceUnavailableException({
        status: 'unavailable',
        store: this.backend.kind,
        message: (error as Error).message,
      });
    }
    return { status: 'ok', store: this.backend.kind };
  }
}
