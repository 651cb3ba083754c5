import { Module } from '@nestjs/common';
import { TerminusModule } from '@nestjs/terminus';
import { HealthController } from './health.controller';

/** LockHealthIndicator comes from LockModule (global in this app); Terminus runs the check. */
@Module({ imports: [TerminusModule.forRoot({ errorLogStyle: 'pretty' })], controllers: [HealthController] })
export class HealthModule {}
