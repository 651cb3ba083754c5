import type { LockModuleOptions } from '../../lib';
import { CLIENT_FAMILIES, CLIENT_FAMILY_NAMES, type ClientFamilyName, type LentClient } from './client-families';
import { RedisProcess, startRedisServers } from './redis-server';

/** The deployments a row runs on: in-process, one Redis, Redlock over 3 or 5 nodes. */
type Deployment = 'memory' | 'redis' | 'redlock3' | 'redlock5';

/**
 * The stores one behavioural suite can run against. A plain name connects by URL (the module makes and owns
 * ioredis connections); `<store>+<family>` lends the module a client of that family per server instead
 * (README, "Connections").
 */
export type StoreName = Deployment | `${'redis' | 'redlock3'}+${ClientFamilyName}`;

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
  /**
   * Stops the servers. On a row with lent clients, first checks that no module closed one of them (every
   * module of the file is closed by then) and closes them.
   */
  teardown(): Promise<void>;
}

export interface StoreFixture {
  readonly name: StoreName;
  /** Whether the store lives in Redis (server-side tests: DEL, FLUSHALL, commandstats, kill). */
  readonly usesRedis: boolean;
  /** The client family lent to the module on this row; undefined when it connects by URL. */
  readonly clientFamily?: ClientFamilyName;
  setup(): Promise<StoreUnderTest>;
}

/** Server count of each Redis deployment. */
const SERVERS: Readonly<Record<Exclude<Deployment, 'memory'>, number>> = { redis: 1, redlock3: 3, redlock5: 5 };

async function redisServers(
  name: StoreName,
  deployment: Exclude<Deployment, 'memory'>,
  family?: ClientFamilyName,
): Promise<StoreUnderTest> {
  const servers = await startRedisServers(SERVERS[deployment]);
  let lent: LentClient[] = [];
  try {
    // One client per server, lent to every module of the file, as an application lends the one it has.
    if (family) lent = await Promise.all(servers.map((server) => CLIENT_FAMILIES[family].client(server.url)));
  } catch (error) {
    await Promise.all(servers.map((server) => server.stop()));
    throw error;
  }
  const targets: unknown[] = family ? lent.map((client) => client.client) : servers.map((server) => server.url);
  const connection = (deployment === 'redis' ? { redis: targets[0] } : { nodes: targets }) as LockModuleOptions;
  return {
    name,
    options: (extra = {}) => ({ ...connection, ...extra }),
    servers,
    sharedAcrossModules: true,
    teardown: async () => {
      const closedByModule = lent.filter((client) => client.wasClosed());
      await Promise.all(lent.map((client) => client.close()));
      await Promise.all(servers.map((server) => server.stop()));
      if (closedByModule.length > 0)
        throw new Error(`${name}: a module closed ${closedByModule.length} lent client(s)`);
    },
  };
}

function redisRow(name: StoreName, deployment: Exclude<Deployment, 'memory'>, family?: ClientFamilyName): StoreFixture {
  return { name, usesRedis: true, clientFamily: family, setup: () => redisServers(name, deployment, family) };
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
  redisRow('redis', 'redis'),
  redisRow('redlock3', 'redlock3'),
  redisRow('redlock5', 'redlock5'),
  ...CLIENT_FAMILY_NAMES.flatMap((family) => [
    redisRow(`redis+${family}`, 'redis', family),
    redisRow(`redlock3+${family}`, 'redlock3', family),
  ]),
];

/**
 * The rows the core suite runs by default: every store, connected by URL. A lent-client row costs about
 * 15 s of the default run's budget, so those rows run on demand, while every family is tested by default in
 * test/clients (its adapter, the module over a lent client, Redlock, a Cluster) and test/replication:
 * LOCK_TEST_CLIENTS=all (or a list of families) adds the `redis+<family>` and `redlock3+<family>` rows, and
 * LOCK_TEST_STORES names rows exactly (LOCK_TEST_STORES=redis+node-redis5,redlock3+iovalkey).
 */
export const CORE_STORE_NAMES: readonly StoreName[] = ['memory', 'redis', 'redlock3', 'redlock5'];

/**
 * The fixtures named by LOCK_TEST_STORES (comma-separated), or by `defaults` plus LOCK_TEST_CLIENTS's rows.
 * Either way only rows on a deployment of `defaults` (a suite written for one Redis never runs on Redlock).
 */
export function storesUnderTest(defaults: readonly StoreName[] = CORE_STORE_NAMES): StoreFixture[] {
  const requested = process.env.LOCK_TEST_STORES?.split(',')
    .map((name) => name.trim())
    .filter(Boolean);
  const names: string[] = requested?.length ? requested : [...defaults, ...clientRows(defaults)];
  const unknown = names.filter((name) => !STORE_MATRIX.some((store) => store.name === name));
  if (unknown.length > 0) {
    throw new Error(
      `LOCK_TEST_STORES names unknown stores: ${unknown.join(', ')} (known: ${STORE_MATRIX.map((s) => s.name).join(', ')})`,
    );
  }
  const deployments = new Set(defaults.map(deploymentOf));
  return STORE_MATRIX.filter((store) => names.includes(store.name) && deployments.has(deploymentOf(store.name)));
}

/** 'redis+node-redis5' → 'redis'. */
function deploymentOf(name: StoreName): Deployment {
  return name.split('+')[0] as Deployment;
}

/**
 * The rows LOCK_TEST_CLIENTS adds to `defaults`: for each family named ('all' for every one), its one-Redis
 * and Redlock rows, where `defaults` has the plain store.
 */
function clientRows(defaults: readonly StoreName[]): StoreName[] {
  const requested =
    process.env.LOCK_TEST_CLIENTS?.split(',')
      .map((name) => name.trim())
      .filter(Boolean) ?? [];
  const families = requested.includes('all') ? CLIENT_FAMILY_NAMES : requested;
  const unknown = families.filter((family) => !CLIENT_FAMILY_NAMES.includes(family as ClientFamilyName));
  if (unknown.length > 0)
    throw new Error(
      `LOCK_TEST_CLIENTS names unknown client families: ${unknown.join(', ')} (known: ${CLIENT_FAMILY_NAMES.join(', ')}, all)`,
    );
  return families.flatMap((family) =>
    (['redis', 'redlock3'] as const)
      .filter((store) => defaults.includes(store))
      .map((store): StoreName => `${store}+${family as ClientFamilyName}`),
  );
}

/** `describe.each` rows: [name, fixture], so the name shows in the test title with '%s'. */
export function storeRows(fixtures: readonly StoreFixture[] = storesUnderTest()): [StoreName, StoreFixture][] {
  return fixtures.map((fixture) => [fixture.name, fixture]);
}

/**
 * `describe.each(storeRows(fixtures))(title, body)`, with the rows run side by side and each row's tests in
 * order. For the suites that mostly wait on real leases (a ttl, minHold, renewals): their waits overlap instead
 * of adding up, none of them shortened. A row has servers, apps and keys of its own; what rows share is the
 * process, so such a suite must not reach for it: no spies on a prototype (Logger.prototype), no process
 * listeners, and no `expect(promise).resolves` / `.rejects` (the global expect attaches those to whichever test
 * started last, so one row's failure would be reported in another row too): `expect(await promise)` and
 * `rejectionOf` instead.
 */
export function describeEachStore(
  title: string,
  body: (name: StoreName, fixture: StoreFixture) => void,
  fixtures: readonly StoreFixture[] = storesUnderTest(),
): void {
  describe.each(storeRows(fixtures))(title, { concurrent: true }, (name, fixture) => {
    // Unnamed, so titles read as before: 'lease renewal (redis store) > …'.
    describe.sequential('', () => body(name, fixture));
  });
}
