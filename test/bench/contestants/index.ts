export * from './contestant';
export { libraryBorrowedEntry, libraryEntry, libraryNodeRedisEntry } from './library.contestant';
export { redlockEntry } from './redlock.contestant';
export { redisSemaphoreEntry } from './redis-semaphore.contestant';
export { rawEntry } from './raw-ioredis.contestant';
