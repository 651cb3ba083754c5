export * from './lock-store.interface';
