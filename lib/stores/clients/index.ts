export * from './client-shape';
export * from './lock-client';
export * from './lock-client.factory';
export * from './lock-script';
