import { Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import Redis from 'ioredis';
import { LockModule, LockService, type LockModuleOptions } from '../../../lib';
import { closeClients } from './close-clients';
import { LEASE_MS, MAX_WAIT_MS, type Contestant, type ContestantEntry } from './contestant';

/** The root of the benchmark's Nest application context: nothing but the LockModule. */
@Module({})
class BenchAppModule {}

/**
 * Who makes the Redis connection: the module, from URLs (`redis: url`, `nodes: [urls]`), or the user, who
 * passes ioredis clients of their own (`redis: client`, `nodes: [clients]`), which the module borrows and
 * never closes. Both are common: the second is what `@nestjs-modules/ioredis` and similar setups do.
 */
export type ClientOwnership = 'owned' | 'borrowed';

/**
 * This library as a user runs it: LockService from a plain Nest application context, auto-extension on,
 * over a module-owned connection or over plain `new Redis(url)` clients the user made (the peers use the
 * same kind of client), borrowed by the module and closed here after the module.
 */
export async function createLibraryContestant(urls: readonly string[], ownership: ClientOwnership): Promise<Contestant> {
  const clients = ownership === 'borrowed' ? urls.map((url) => new Redis(url)) : [];
  let connection: LockModuleOptions;
  if (ownership === 'owned') connection = urls.length === 1 ? { redis: urls[0] } : { nodes: [...urls] };
  else connection = clients.length === 1 ? { redis: clients[0] } : { nodes: clients };
  try {
    const app = await NestFactory.createApplicationContext(
      { module: BenchAppModule, imports: [LockModule.forRoot({ ...connection, ttl: LEASE_MS, wait: MAX_WAIT_MS, autoExtend: true })] },
      { logger: ['error', 'warn'] },
    );
    const locks = app.get(LockService);
    await locks.isLocked('bench:connect');
    return {
      lock: (key) => locks.acquire(key),
      // One permit of a `limit`-permit key (issue 15): a Lock like any other, waiting without polling.
      semaphore: (key, limit) => locks.acquire(key, { limit }),
      close: async () => {
        await app.close();
        // Borrowed clients are the user's to close, after the module let go of them.
        await closeClients(clients);
      },
    };
  } catch (error) {
    await closeClients(clients);
    throw error;
  }
}

export const libraryEntry: ContestantEntry = {
  id: 'library',
  label: 'nestjs-redis-lock, owned client',
  role: 'library',
  waits: true,
  create: (urls) => createLibraryContestant(urls, 'owned'),
};

export const libraryBorrowedEntry: ContestantEntry = {
  id: 'library-borrowed',
  label: 'nestjs-redis-lock, borrowed client',
  role: 'library',
  waits: true,
  create: (urls) => createLibraryContestant(urls, 'borrowed'),
};
