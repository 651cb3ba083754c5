export * from './contestant';
export {
  type ClientOwnership,
  createLibraryContestant,
  libraryBorrowedEntry,
  libraryBorrowedIoredis5Entry,
  libraryBorrowedIoredis6Entry,
  libraryEntry,
  libraryNodeRedisEntry,
} from './library.contestant';
export { lentIoredis, loadedLentIoredis } from './lent-ioredis';
export { redlockEntry } from './redlock.contestant';
export { redisSemaphoreEntry } from './redis-semaphore.contestant';
export { rawEntry } from './raw-ioredis.contestant';
