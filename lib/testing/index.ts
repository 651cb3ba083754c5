export { LockTesting } from './lock-testing';
export type { HeldElsewhere, HoldElsewhereOptions } from './lock-testing.interface';
