// The LockModule class: what it imports, provides and exports, and its forRoot / forRootAsync entry points.
import { Module } from '@nestjs/common';
import { DiscoveryModule } from '@nestjs/core';
import { LockOptionsError } from './errors';
import {
  ConfigurableLockModule,
  LOCK_MODULE_ASYNC_OPTIONS_TYPE,
  LOCK_MODULE_OPTIONS_TYPE,
} from './lock.module-definition';
import { LOCK_EXPORTS, LOCK_PROVIDERS } from './lock.providers';

/**
 * `LockModule.forRoot(options)` / `forRootAsync({ useFactory, inject, imports, useClass, useExisting })`.
 * Options are merged with the defaults and validated once, when the module is instantiated: a bad option
 * fails the application's bootstrap with a LockOptionsError.
 */
@Module({
  imports: [DiscoveryModule],
  providers: LOCK_PROVIDERS,
  exports: LOCK_EXPORTS,
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
