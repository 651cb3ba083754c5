export * from './errors';
export * from './lock.constants';
export * from './lock.interface';
export * from './lock-options.interface';
export { LOCK_DEFAULTS } from './lock-options.resolver';
export { LockModule } from './lock.module';
export { LockService } from './lock.service';
export { normalizeKeys } from './keys/lock-key.validator';
export type { LockStore, LockKeyNames, AcquireRequest, AcquireOutcome, ReleaseWatch } from './stores/lock-store.interface';
