import { DynamicModule, Global, Module } from '@nestjs/common';
import { APP_CONFIG, type AppConfig } from './app-config';
import { BACKEND, resolveBackend } from './backend';

/**
 * Provides the AppConfig and the resolved Backend to the whole app (global, like @nestjs/config's
 * ConfigModule with isGlobal). The Backend is an async provider: Nest waits for the embedded
 * redis-server to answer before it builds anything that injects it, LockModule's options included.
 */
@Global()
@Module({})
export class BankConfigModule {
  static forRoot(config: AppConfig): DynamicModule {
    return {
      module: BankConfigModule,
      providers: [
        { provide: APP_CONFIG, useValue: config },
        { provide: BACKEND, inject: [APP_CONFIG], useFactory: (appConfig: AppConfig) => resolveBackend(appConfig) },
      ],
      exports: [APP_CONFIG, BACKEND],
    };
  }
}
