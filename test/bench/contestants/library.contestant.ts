import { Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import Redis from 'ioredis';
import Valkey from 'iovalkey';
import { createClient } from 'redis';
import { createClient as createClientV4 } from 'redis-v4';
import { LockModule, LockService, type LockModuleOptions } from '../../../lib';
import { closeClients } from './close-clients';
import { LEASE_MS, MAX_WAIT_MS, type Contestant, type ContestantEntry } from './contestant';
import { type LentIoredisCopy, lentIoredis } from './lent-ioredis';

/** The root of the benchmark's Nest application context: nothing but the LockModule. */
@Module({})
class BenchAppModule {}

/**
 * Who makes the Redis connection: the module, from URLs (`redis: url`, `nodes: [urls]`), or the user, who
 * passes clients of their own (`redis: client`, `nodes: [clients]`), which the module borrows and never
 * closes: ioredis clients (what `@nestjs-modules/ioredis` and similar setups do) or node-redis 5 clients
 * (the `redis` package, e.g. from `@keyv/redis` or an app's own provider). `borrowed` lends clients of the
 * library's own copy of ioredis; an application's own ioredis is as a rule another copy (another version, or
 * the same one installed twice), lent by `borrowed-ioredis5` and `borrowed-ioredis6` (see lent-ioredis.ts).
 * iovalkey and node-redis 4 clients are lent only by the client-family profile (profile/client-families.ts).
 */
export type ClientOwnership =
  | 'owned'
  | 'borrowed'
  | 'borrowed-ioredis5'
  | 'borrowed-ioredis6'
  | 'borrowed-iovalkey'
  | 'borrowed-node-redis'
  | 'borrowed-node-redis4';

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
  if (ownership === 'borrowed-ioredis5' || ownership === 'borrowed-ioredis6') {
    const { Redis: AppRedis } = lentIoredis(ownership.slice('borrowed-'.length) as LentIoredisCopy);
    const clients = urls.map((url) => new AppRedis(url));
    // The module takes such a client by its shape (IoredisLikeClient); its copy's types are not compiled here.
    return { clients: clients as unknown as LentClients['clients'], close: () => closeClients(clients) };
  }
  if (ownership === 'borrowed-iovalkey') {
    const clients = urls.map((url) => new Valkey(url));
    return { clients, close: () => closeClients(clients) };
  }
  if (ownership === 'borrowed-node-redis' || ownership === 'borrowed-node-redis4') {
    const clients = urls.map((url) =>
      ownership === 'borrowed-node-redis' ? createClient({ url }) : createClientV4({ url }),
    );
    await Promise.all(clients.map((client) => client.connect()));
    return {
      clients,
      close: async () => {
        // node-redis 5's close(); node-redis 4 has quit() only.
        await Promise.all(clients.map((client) => ('close' in client ? client.close() : client.quit())));
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

export const libraryBorrowedIoredis5Entry: ContestantEntry = {
  id: 'library-borrowed-ioredis5',
  label: "nestjs-redis-lock, borrowed app's ioredis 5",
  role: 'library',
  waits: true,
  create: (urls) => createLibraryContestant(urls, 'borrowed-ioredis5'),
};

export const libraryBorrowedIoredis6Entry: ContestantEntry = {
  id: 'library-borrowed-ioredis6',
  label: "nestjs-redis-lock, borrowed app's ioredis 6",
  role: 'library',
  waits: true,
  create: (urls) => createLibraryContestant(urls, 'borrowed-ioredis6'),
};

export const libraryNodeRedisEntry: ContestantEntry = {
  id: 'library-node-redis',
  label: 'nestjs-redis-lock, borrowed node-redis client',
  role: 'library',
  waits: true,
  create: (urls) => createLibraryContestant(urls, 'borrowed-node-redis'),
};
