// LockModule's options, tokens and forRoot / forRootAsync, from Nest's ConfigurableModuleBuilder.
import { ConfigurableModuleBuilder } from '@nestjs/common';
import type { LockModuleOptions } from './options/lock-options.interface';

export const {
  ConfigurableModuleClass: ConfigurableLockModule,
  MODULE_OPTIONS_TOKEN: LOCK_MODULE_OPTIONS,
  OPTIONS_TYPE: LOCK_MODULE_OPTIONS_TYPE,
  ASYNC_OPTIONS_TYPE: LOCK_MODULE_ASYNC_OPTIONS_TYPE,
} = new ConfigurableModuleBuilder<LockModuleOptions>({ moduleName: 'Lock' })
  .setClassMethodName('forRoot')
  .setExtras({ isGlobal: false }, (definition, extras) => ({ ...definition, global: extras.isGlobal }))
  .build();
