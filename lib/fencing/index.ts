export * from './fenced-writer';
export * from './fenced-write-rejected.error';
export { lastFenceKeyOf } from './fence-keys';
