import { Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { LockModule, LockService, type LockModuleOptions } from '../../../lib';
import { LEASE_MS, MAX_WAIT_MS, type Contestant, type ContestantEntry } from './contestant';

/** The root of the benchmark's Nest application context: nothing but the LockModule. */
@Module({})
class BenchAppModule {}

/**
 * This library as a user runs it: LockService from a plain Nest application context, the module owning
 * its client (made from the URL, so ioredis auto-pipelining is on), auto-extension on.
 */
export async function createLibraryContestant(urls: readonly string[]): Promise<Contestant> {
  const connection: LockModuleOptions = urls.length === 1 ? { redis: urls[0] } : { nodes: [...urls] };
  const app = await NestFactory.createApplicationContext(
    { module: BenchAppModule, imports: [LockModule.forRoot({ ...connection, ttl: LEASE_MS, wait: MAX_WAIT_MS, autoExtend: true })] },
    { logger: ['error', 'warn'] },
  );
  const locks = app.get(LockService);
  await locks.isLocked('bench:connect');
  return {
    lock: (key) => locks.acquire(key),
    close: () => app.close(),
  };
}

export const libraryEntry: ContestantEntry = {
  id: 'library',
  label: 'nestjs-redis-lock (this)',
  role: 'library',
  waits: true,
  create: createLibraryContestant,
};
