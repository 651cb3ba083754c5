import { Logger } from '@nestjs/common';
import Redis from 'ioredis';
import { randomBytes } from 'node:crypto';
import type { LockKeyNames } from '../../../lib';
import { LockKeyNamer } from '../../../lib/keys';
import { RedlockLockStore } from '../../../lib/stores/redlock/redlock-lock.store';
import { type RedisProcess, startRedisServers } from '../../support/redis-server';

/** N independent redis-server processes for one spec file, plus plain clients for inspecting them. */
export interface RedlockNodes {
  readonly servers: readonly RedisProcess[];
  readonly urls: readonly string[];
  /** One inspection client per server (not the store's): only use it on servers that are not paused. */
  readonly inspectors: readonly Redis[];
  /** Resumes every server (a paused one would hang the teardown's commands) and stops them all. */
  stop(): Promise<void>;
}

export async function startRedlockNodes(count: number): Promise<RedlockNodes> {
  const servers = await startRedisServers(count);
  const inspectors = servers.map((server) => new Redis(server.url, { maxRetriesPerRequest: 1, lazyConnect: false }));
  inspectors.forEach((client) => client.on('error', () => undefined));
  return {
    servers,
    urls: servers.map((server) => server.url),
    inspectors,
    stop: async () => {
      for (const server of servers) server.resume();
      inspectors.forEach((client) => client.disconnect());
      await Promise.all(servers.map((server) => server.stop()));
    },
  };
}

/**
 * A Redlock store over `urls`, as LockModule would build it. The nodes' connection warnings (a killed
 * server refusing connections) are expected in these tests: only errors reach the output.
 */
export function redlockStore(urls: readonly string[], commandTimeout?: number): RedlockLockStore {
  Logger.overrideLogger(['error', 'fatal']);
  return new RedlockLockStore(urls, { driftFactor: 0.01, commandTimeout });
}

const namer = new LockKeyNamer('lock:');

/** The Redis names of a fresh, unique lock key. */
export function freshLock(label: string): LockKeyNames {
  return namer.names(`${label}-${randomBytes(5).toString('hex')}`);
}

export function freshToken(): string {
  return randomBytes(16).toString('hex');
}

/** The value of `redisKey` on each server, read through the inspection clients. */
export function valuesOn(nodes: RedlockNodes, redisKey: string): Promise<(string | null)[]> {
  return Promise.all(nodes.inspectors.map((client) => client.get(redisKey)));
}

export { eventually } from '../../support/eventually';

/** Blocks the event loop (no timer, no I/O callback runs) for `ms`, like a long GC pause or a CPU-bound task. */
export function blockEventLoop(ms: number): void {
  const until = performance.now() + ms;
  while (performance.now() < until) {
    // Spinning on purpose.
  }
}
