export * from './lock-key.validator';
export * from './lock-key-namer';
export * from './leader-namespace';
