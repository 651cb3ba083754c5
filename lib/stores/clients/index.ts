// The client seam the stores use: re-exports only.
export * from '../../options/client-shape';
export * from './lock-client';
export * from './lock-client.factory';
export * from './lock-script';
