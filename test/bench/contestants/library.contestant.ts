import { Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import Redis from 'ioredis';
import { createClient } from 'redis';
import { LockModule, LockService, type LockModuleOptions } from '../../../lib';
import { closeClients } from './close-clients';
import { LEASE_MS, MAX_WAIT_MS, type Contestant, type ContestantEntry } from './contestant';

/** The root of the benchmark's Nest application context: nothing but the LockModule. */
@Module({})
class BenchAppModule {}

/**
 * Who makes the Redis connection: the module, from URLs (`redis: url`, `nodes: [urls]`), or the user, who
 * passes clients of their own (`redis: client`, `nodes: [clients]`), which the module borrows and never
 * closes: ioredis clients (what `@nestjs-modules/ioredis` and similar setups do) or node-redis 5 clients
 * (the `redis` package, e.g. from `@keyv/redis` or an app's own provider).
 */
export type ClientOwnership = 'owned' | 'borrowed' | 'borrowed-node-redis';

/** Clients a user made and lends to the module, and how the user closes them after the module. */
interface LentClients {
  readonly clients: readonly NonNullable<LockModuleOptions['redis']>[];
  close(): Promise<void>;
}

async function lendClients(urls: readonly string[], ownership: ClientOwnership): Promise<LentClients> {
  if (ownership === 'borrowed') {
    const clients = urls.map((url) => new Redis(url));
    return { clients, close: () => closeClients(clients) };
  }
  if (ownership === 'borrowed-node-redis') {
    const clients = urls.map((url) => createClient({ url }));
    await Promise.all(clients.map((client) => client.connect()));
    return {
      clients,
      close: async () => {
        await Promise.all(clients.map((client) => client.close()));
      },
    };
  }
  return { clients: [], close: async () => undefined };
}

/**
 * This library as a user runs it: LockService from a plain Nest application context, auto-extension on,
 * over a module-owned connection or over plain `new Redis(url)` clients the user made (the peers use the
 * same kind of client), borrowed by the module and closed here after the module.
 */
export async function createLibraryContestant(
  urls: readonly string[],
  ownership: ClientOwnership,
): Promise<Contestant> {
  const lent = await lendClients(urls, ownership);
  const { clients } = lent;
  let connection: LockModuleOptions;
  if (ownership === 'owned') connection = urls.length === 1 ? { redis: urls[0] } : { nodes: [...urls] };
  else connection = clients.length === 1 ? { redis: clients[0] } : { nodes: clients as LockModuleOptions['nodes'] };
  try {
    const app = await NestFactory.createApplicationContext(
      {
        module: BenchAppModule,
        imports: [LockModule.forRoot({ ...connection, ttl: LEASE_MS, wait: MAX_WAIT_MS, autoExtend: true })],
      },
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
        await lent.close();
      },
    };
  } catch (error) {
    await lent.close();
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

export const libraryNodeRedisEntry: ContestantEntry = {
  id: 'library-node-redis',
  label: 'nestjs-redis-lock, borrowed node-redis client',
  role: 'library',
  waits: true,
  create: (urls) => createLibraryContestant(urls, 'borrowed-node-redis'),
};
