export * from './contestant';
export { libraryEntry } from './library.contestant';
export { redlockEntry } from './redlock.contestant';
export { redisSemaphoreEntry } from './redis-semaphore.contestant';
export { rawEntry } from './raw-ioredis.contestant';
