export * from './lock.error';
export * from './lock-not-acquired.error';
export * from './lock-unavailable.error';
export * from './lock-lost.error';
export * from './invalid-lock-key.error';
export * from './lock-options.error';
export type { LockErrorCode, LockErrorPayload, LockErrorResponse } from './lock-error-table';
