export * from './contestant';
export { libraryBorrowedEntry, libraryEntry } from './library.contestant';
export { redlockEntry } from './redlock.contestant';
export { redisSemaphoreEntry } from './redis-semaphore.contestant';
export { rawEntry } from './raw-ioredis.contestant';
