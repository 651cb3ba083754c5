import { Module } from '@nestjs/common';
import { APP_INTERCEPTOR, DiscoveryModule } from '@nestjs/core';
import { LockOptionsError } from './errors';
import { LOCK_OPTIONS, LOCK_STORE } from './lock.constants';
import {
  ConfigurableLockModule,
  LOCK_MODULE_ASYNC_OPTIONS_TYPE,
  LOCK_MODULE_OPTIONS,
  LOCK_MODULE_OPTIONS_TYPE,
} from './lock.module-definition';
import type { LockModuleOptions } from './options/lock-options.interface';
import { resolveLockOptions } from './options/module-options.resolver';
import { LockHealthIndicator } from './health/lock-health.indicator';
import { LockErrorFilter } from './lock-error.filter';
import { LockErrorMappingInterceptor } from './lock-error-mapping.interceptor';
import { LockExplorer } from './lock.explorer';
import { LockInterceptor } from './lock.interceptor';
import { LockMetadataAccessor } from './lock-metadata.accessor';
import { LockModuleCensus } from './lock-module-census';
import { LockStartupCheck } from './lock-startup-check';
import { LockService } from './lock.service';
import { RetryAfterEstimator } from './retry-after.estimator';
import { createLockStore } from './stores/lock-store.factory';
import { LockTesting } from './testing/lock-testing';

/**
 * What the bare LockModule class (imported without forRoot / forRootAsync) provides as its options: forRoot's and
 * forRootAsync's own provider replaces it (a dynamic module's providers come after the class's). Without it the
 * bare import would fail with Nest's "can't resolve dependencies of the LOCK:OPTIONS", which says nothing of the
 * mistake.
 */
const NOT_CONFIGURED = Symbol('LockModule imported without forRoot()');

/**
 * `LockModule.forRoot(options)` / `forRootAsync({ useFactory, inject, imports, useClass, useExisting })`.
 * Options are merged with the defaults and validated once, when the module is instantiated: a bad option
 * fails the application's bootstrap with a LockOptionsError.
 */
@Module({
  imports: [DiscoveryModule],
  providers: [
    { provide: LOCK_MODULE_OPTIONS, useValue: NOT_CONFIGURED },
    {
      provide: LOCK_OPTIONS,
      useFactory: (options: LockModuleOptions | undefined | typeof NOT_CONFIGURED) => {
        if (options === NOT_CONFIGURED) {
          throw new LockOptionsError(
            'LockModule import',
            LockModule,
            'LockModule.forRoot(options) or LockModule.forRootAsync({ … }), imported once; where LockService is needed ' +
              'elsewhere, nothing more with isGlobal: true, else a module of yours with imports: [LockModule.forRoot(options)], ' +
              'exports: [LockModule]',
            'the LockModule class, without forRoot() or forRootAsync()',
          );
        }
        return resolveLockOptions(options);
      },
      inject: [LOCK_MODULE_OPTIONS],
    },
    { provide: LOCK_STORE, useFactory: createLockStore, inject: [LOCK_OPTIONS] },
    LockService,
    LockMetadataAccessor,
    LockInterceptor,
    LockExplorer,
    RetryAfterEstimator,
    LockModuleCensus,
    LockStartupCheck,
    // Lock errors from service methods and LockService calls, mapped per transport for every handler (the
    // `errorMapping` option). An interceptor, not a filter: the application's own exception filters keep seeing
    // the errors themselves (Nest consults a library's APP_FILTER before the root module's).
    { provide: APP_INTERCEPTOR, useClass: LockErrorMappingInterceptor },
    // For applications that register it themselves (APP_FILTER, useGlobalFilters, @UseFilters): never applied
    // by the module itself.
    LockErrorFilter,
    // For @nestjs/terminus health checks; the library never loads Terminus itself (see the indicator).
    LockHealthIndicator,
    // For the application's tests; inert until called, and it refuses a module configured with Redis.
    LockTesting,
  ],
  exports: [LockService, LockMetadataAccessor, LockInterceptor, LockErrorFilter, LockHealthIndicator, LockTesting, LOCK_OPTIONS],
})
export class LockModule extends ConfigurableLockModule {
  static forRoot(options: typeof LOCK_MODULE_OPTIONS_TYPE = {}) {
    // Checked before Nest's module builder spreads it (a string would become { 0: 'r', 1: 'e', ... }).
    if (typeof options !== 'object' || options === null || Array.isArray(options)) {
      throw new LockOptionsError('options', options, 'an object of LockModuleOptions');
    }
    return super.forRoot(options);
  }

  static forRootAsync(options: typeof LOCK_MODULE_ASYNC_OPTIONS_TYPE) {
    return super.forRootAsync(options);
  }
}
