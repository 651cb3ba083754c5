// The providers and exports of every LockModule, and the refusal of a bare LockModule import (without forRoot).
import type { Provider } from '@nestjs/common';
import { APP_INTERCEPTOR } from '@nestjs/core';
import { LockOptionsError } from './errors';
import { LockHealthIndicator } from './health/lock-health.indicator';
import { LockErrorFilter } from './interceptors/lock-error.filter';
import { LockErrorMappingInterceptor } from './interceptors/lock-error-mapping.interceptor';
import { LockExplorer } from './discovery/lock.explorer';
import { LeaderExplorer } from './discovery/leader.explorer';
import { LockInterceptor } from './interceptors/lock.interceptor';
import { LockMetadataAccessor } from './decorators/lock-metadata.accessor';
import { LockModuleCensus } from './discovery/lock-module-census';
import { LockStartupCheck } from './health/lock-startup-check';
import { LOCK_OPTIONS, LOCK_STORE } from './lock.constants';
import { LOCK_MODULE_OPTIONS } from './lock.module-definition';
import { LockService } from './lock.service';
import type { LockModuleOptions } from './options/lock-options.interface';
import { resolveLockOptions } from './options/module-options.resolver';
import { RetryAfterEstimator } from './interceptors/retry-after.estimator';
import { createLockStore } from './stores/lock-store.factory';
import { LockTesting } from './testing/lock-testing';

/** What LockModule provides: its options resolved once, the store chosen from them, and the parts built on both. */

/**
 * What the bare LockModule class (imported without forRoot / forRootAsync) provides as its options: forRoot's and
 * forRootAsync's own provider replaces it (a dynamic module's providers come after the class's). Without it the
 * bare import would fail with Nest's "can't resolve dependencies of the LOCK:OPTIONS", which says nothing of the
 * mistake.
 */
export const NOT_CONFIGURED = Symbol('LockModule imported without forRoot()');

/** The providers of every LockModule; forRoot / forRootAsync add the options the builder makes. */
export const LOCK_PROVIDERS: Provider[] = [
  { provide: LOCK_MODULE_OPTIONS, useValue: NOT_CONFIGURED },
  {
    provide: LOCK_OPTIONS,
    useFactory: (options: LockModuleOptions | undefined | typeof NOT_CONFIGURED) => {
      if (options === NOT_CONFIGURED) {
        throw new LockOptionsError(
          'LockModule import',
          'LockModule',
          'LockModule.forRoot(options) or LockModule.forRootAsync({ … }), ' +
            'imported once; where LockService is needed ' +
            'elsewhere, nothing more with isGlobal: true, ' +
            'else a module of yours with imports: [LockModule.forRoot(options)], ' +
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
  LeaderExplorer,
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
];

/** What importers of LockModule may inject. */
export const LOCK_EXPORTS = [
  LockService,
  LockMetadataAccessor,
  LockInterceptor,
  LockErrorFilter,
  LockHealthIndicator,
  LockTesting,
  LOCK_OPTIONS,
];
