import { DynamicModule, Module, ValidationPipe } from '@nestjs/common';
import { APP_FILTER, APP_PIPE } from '@nestjs/core';
import { ScheduleModule } from '@nestjs/schedule';
import { LockModule } from '../../lib';
import { AccountsModule } from './accounts/accounts.module';
import { BankErrorsFilter } from './common/bank-errors.filter';
import { readAppConfig, type AppConfig } from './config/app-config';
import { BACKEND, lockModuleOptions, type Backend } from './config/backend';
import { BankConfigModule } from './config/config.module';
import { FxModule } from './fx/fx.module';
import { HealthModule } from './health/health.module';
import { InterestModule } from './interest/interest.module';
import { LedgerModule } from './ledger/ledger.module';
import { ReportsModule } from './reports/reports.module';
import { StorageModule } from './storage/storage.module';
import { TransfersModule } from './transfers/transfers.module';

@Module({})
export class AppModule {
  /** The whole app; `config` defaults to the environment (tests pass their own). */
  static forRoot(config: AppConfig = readAppConfig(process.env)): DynamicModule {
    return {
      module: AppModule,
      imports: [
        BankConfigModule.forRoot(config),
        // The options depend on the environment, and on an embedded redis-server started at boot: an
        // async factory, injected with what it needs, like `inject: [ConfigService]` with @nestjs/config.
        // Global, so every module can inject LockService.
        LockModule.forRootAsync({
          isGlobal: true,
          inject: [BACKEND],
          useFactory: (backend: Backend) => lockModuleOptions(backend),
        }),
        ScheduleModule.forRoot(),
        StorageModule,
        AccountsModule,
        TransfersModule.register({ locks: config.locks }),
        ReportsModule,
        FxModule,
        InterestModule,
        LedgerModule,
        HealthModule,
      ],
      providers: [
        // whitelist + forbidNonWhitelisted: a body with unknown fields is a 400 too.
        { provide: APP_PIPE, useValue: new ValidationPipe({ whitelist: true, forbidNonWhitelisted: true }) },
        { provide: APP_FILTER, useClass: BankErrorsFilter },
      ],
    };
  }
}
