export * from './lock-health.indicator';
export type { NodeHealth, StoreHealth } from '../stores/store-health';
