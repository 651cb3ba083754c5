export * from './errors';
export * from './lock.constants';
export * from './lock.interface';
export * from './options/lock-options.interface';
export { LOCK_DEFAULTS } from './options/module-options.resolver';
export { LockModule } from './lock.module';
export { LockService } from './lock.service';
export type { LeaderInfo, LeaderTerm, Leadership, LeaderDeposedReason } from './engine/leader/leader.interface';
export type { LeaderOptions } from './options/leader-options';
export * from './decorators';
export { LockInterceptor } from './interceptors/lock.interceptor';
export { LockErrorFilter } from './interceptors/lock-error.filter';
export type { LockedKey, LockKeyFunction } from './keys/key-template';
export { normalizeKeys } from './keys/lock-key.validator';
export * from './fencing';
export type {
  LockEvent,
  LockEventType,
  LockAcquiredEvent,
  LockReleasedEvent,
  LockBusyEvent,
  LockLostEvent,
  LockUnavailableEvent,
  LockElectedEvent,
  LockDeposedEvent,
  LockInfo,
  LockHolder,
} from './observability';
export { LOCK_ATTRIBUTES, LOCK_INSTRUMENTATION_SCOPE, LOCK_METRICS, LOCK_WAIT_SPAN } from './observability';
export * from './health';
export * from './testing';
