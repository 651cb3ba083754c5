import { Logger } from '@nestjs/common';
import Redis from 'ioredis';
import { randomBytes } from 'node:crypto';
import type { RedlockNode } from '../../../lib';
import type { LockKeyNames } from '../../../lib/keys/lock-key-names';
import { LockKeyNamer } from '../../../lib/keys';
import { RedlockLockStore } from '../../../lib/stores/redlock/redlock-lock.store';
import {
  CLIENT_FAMILIES,
  CLIENT_FAMILY_NAMES,
  type ClientFamilyName,
  type LentClient,
} from '../../support/client-families';
import { type RedisProcess, startRedisServers } from '../../support/redis-server';

/**
 * The client family the Redlock suite lends its nodes as: LOCK_TEST_REDLOCK_CLIENT=iovalkey (or node-redis5,
 * node-redis4, ioredis). Unset, the nodes are given as URLs and the module makes its own ioredis connections.
 * `npm run test:clients` runs the suite once per family.
 */
export const REDLOCK_CLIENT_FAMILY = redlockClientFamily(process.env.LOCK_TEST_REDLOCK_CLIENT);

function redlockClientFamily(name: string | undefined): ClientFamilyName | undefined {
  if (!name) return undefined;
  if (!(CLIENT_FAMILY_NAMES as readonly string[]).includes(name)) {
    throw new Error(
      `LOCK_TEST_REDLOCK_CLIENT=${name} is not a client family (known: ${CLIENT_FAMILY_NAMES.join(', ')})`,
    );
  }
  return name as ClientFamilyName;
}

/** N independent redis-server processes for one spec file, plus plain clients for inspecting them. */
export interface RedlockNodes {
  readonly servers: readonly RedisProcess[];
  readonly urls: readonly string[];
  /** One inspection client per server (not the store's): only use it on servers that are not paused. */
  readonly inspectors: readonly Redis[];
  /**
   * What to pass as `nodes`: the URLs, or (LOCK_TEST_REDLOCK_CLIENT) clients of that family lent to the
   * module, one per server, shared by every module of the spec as one application's clients would be.
   */
  readonly option: RedlockNode[];
  /** Resumes every server (a paused one would hang the teardown's commands) and stops them all. */
  stop(): Promise<void>;
}

export async function startRedlockNodes(count: number): Promise<RedlockNodes> {
  const servers = await startRedisServers(count);
  const inspectors = servers.map((server) => new Redis(server.url, { maxRetriesPerRequest: 1, lazyConnect: false }));
  inspectors.forEach((client) => client.on('error', () => undefined));
  const lent: LentClient[] = REDLOCK_CLIENT_FAMILY
    ? await Promise.all(servers.map((server) => CLIENT_FAMILIES[REDLOCK_CLIENT_FAMILY].client(server.url)))
    : [];
  const urls = servers.map((server) => server.url);
  return {
    servers,
    urls,
    inspectors,
    option: REDLOCK_CLIENT_FAMILY ? lent.map((client) => client.client as RedlockNode) : [...urls],
    stop: async () => {
      for (const server of servers) server.resume();
      inspectors.forEach((client) => client.disconnect());
      // Lent clients are the test's to close (the module never does), after the modules closed.
      await Promise.all(lent.map((client) => client.close()));
      await Promise.all(servers.map((server) => server.stop()));
    },
  };
}

/**
 * A Redlock store over `urls`, as LockModule would build it. The nodes' connection warnings (a killed
 * server refusing connections) are expected in these tests: only errors reach the output.
 */
export function redlockStore(connections: readonly RedlockNode[], commandTimeout?: number): RedlockLockStore {
  Logger.overrideLogger(['error', 'fatal']);
  return new RedlockLockStore(connections, { driftFactor: 0.01, commandTimeout });
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
