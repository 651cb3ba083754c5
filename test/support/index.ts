export * from './free-port';
export * from './lock-app';
export * from './real-process';
export * from './redis-cluster';
export * from './redis-server';
export * from './redis-stats';
export * from './resp-client';
export * from './store-matrix';
