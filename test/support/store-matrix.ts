import type { LockModuleOptions } from '../../lib';
import { RedisProcess, startRedisServers } from './redis-server';

/** The stores one behavioural suite can run against. */
export type StoreName = 'memory' | 'redis' | 'redlock3' | 'redlock5';

/** A running store for one test file: its module options and the servers behind it. */
export interface StoreUnderTest {
  readonly name: StoreName;
  /** LockModule options that select this store, with `extra` merged over them. */
  options(extra?: LockModuleOptions): LockModuleOptions;
  /** The Redis servers behind the store: none in-process, one for 'redis', N for Redlock. */
  readonly servers: readonly RedisProcess[];
  /**
   * Whether two LockModule instances of this process see each other's locks. False in-process: each
   * module has its own store, so cross-instance tests use one module there.
   */
  readonly sharedAcrossModules: boolean;
  /** Stops the servers. */
  teardown(): Promise<void>;
}

export interface StoreFixture {
  readonly name: StoreName;
  /** Whether the store lives in Redis (server-side tests: DEL, FLUSHALL, commandstats, kill). */
  readonly usesRedis: boolean;
  setup(): Promise<StoreUnderTest>;
}

async function redisServers(name: StoreName, count: number): Promise<StoreUnderTest> {
  const servers = await startRedisServers(count);
  const connection: LockModuleOptions =
    name === 'redis' ? { redis: servers[0].url } : { nodes: servers.map((server) => server.url) };
  return {
    name,
    options: (extra = {}) => ({ ...connection, ...extra }),
    servers,
    sharedAcrossModules: true,
    teardown: async () => {
      await Promise.all(servers.map((server) => server.stop()));
    },
  };
}

export const STORE_MATRIX: readonly StoreFixture[] = [
  {
    name: 'memory',
    usesRedis: false,
    setup: async () => ({
      name: 'memory',
      options: (extra = {}) => ({ ...extra }),
      servers: [],
      sharedAcrossModules: false,
      teardown: async () => undefined,
    }),
  },
  { name: 'redis', usesRedis: true, setup: () => redisServers('redis', 1) },
  { name: 'redlock3', usesRedis: true, setup: () => redisServers('redlock3', 3) },
  { name: 'redlock5', usesRedis: true, setup: () => redisServers('redlock5', 5) },
];

/** The stores the core suite runs against (LOCK_TEST_STORES=memory,redis narrows it for a quick run). */
export const CORE_STORE_NAMES: readonly StoreName[] = ['memory', 'redis', 'redlock3', 'redlock5'];

/** The fixtures named by LOCK_TEST_STORES (comma-separated), or by `defaults`. */
export function storesUnderTest(defaults: readonly StoreName[] = CORE_STORE_NAMES): StoreFixture[] {
  const requested = process.env.LOCK_TEST_STORES?.split(',').map((name) => name.trim()).filter(Boolean);
  const names = requested?.length ? requested : defaults;
  const unknown = names.filter((name) => !STORE_MATRIX.some((store) => store.name === name));
  if (unknown.length > 0) {
    throw new Error(`LOCK_TEST_STORES names unknown stores: ${unknown.join(', ')} (known: ${STORE_MATRIX.map((s) => s.name).join(', ')})`);
  }
  return STORE_MATRIX.filter((store) => names.includes(store.name));
}

/** `describe.each` rows: [name, fixture], so the name shows in the test title with '%s'. */
export function storeRows(fixtures: readonly StoreFixture[] = storesUnderTest()): [StoreName, StoreFixture][] {
  return fixtures.map((fixture) => [fixture.name, fixture]);
}
