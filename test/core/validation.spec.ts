import { ConsoleLogger, DynamicModule } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import {
  InvalidLockKeyError,
  LockModule,
  LockModuleOptions,
  LockOptionsError,
  LockService,
  MAX_KEY_LENGTH,
} from '../../lib';
import { trackLockApps, uniqueKey } from '../support/lock-app';
import { eventually } from '../support/eventually';
import { commandStats, statsDelta } from '../support/redis-stats';
import { StoreUnderTest, storeRows } from '../support/store-matrix';
import { rejectionOf } from './helpers/timing';

/** Nothing listens there: a test that wrongly accepted an option would fail to connect, not reach a real server. */
const UNUSED_URL = 'redis://127.0.0.1:1';

/** Compiles and initialises a module; resolves when it boots (then closes it), rejects with the bootstrap error. */
async function boot(module: DynamicModule): Promise<void> {
  const testing = await Test.createTestingModule({ imports: [module] })
    .setLogger(new ConsoleLogger({ logLevels: [] }))
    .compile();
  try {
    await testing.init();
  } finally {
    await testing.close();
  }
}

describe('bad module options fail the bootstrap with LockOptionsError naming the option', () => {
  const cases: [string, unknown, string[]][] = [
    ['ttl 0', { ttl: 0 }, ['ttl']],
    ['ttl -1', { ttl: -1 }, ['ttl']],
    ['ttl NaN', { ttl: NaN }, ['ttl']],
    ['wait -1', { wait: -1 }, ['wait']],
    ['both redis and nodes', { redis: UNUSED_URL, nodes: [UNUSED_URL] }, ['redis', 'nodes']],
    ['redis as a number', { redis: 6379 }, ['redis']],
    ['redis as a boolean', { redis: true }, ['redis']],
    ['redis as an object that is no connection option', { redis: { foo: 1 } }, ['redis']],
  ];

  it.each(cases)('%s (forRoot)', async (_title, options, named) => {
    const error = await rejectionOf(boot(LockModule.forRoot(options as LockModuleOptions)));
    expect(error).toBeInstanceOf(LockOptionsError);
    expect(named).toContain((error as LockOptionsError).option);
    expect((error as LockOptionsError).message).toContain((error as LockOptionsError).option);
  });

  it.each(cases)('%s (forRootAsync with useFactory)', async (_title, options, named) => {
    const error = await rejectionOf(
      boot(LockModule.forRootAsync({ useFactory: async () => options as LockModuleOptions })),
    );
    expect(error).toBeInstanceOf(LockOptionsError);
    expect(named).toContain((error as LockOptionsError).option);
  });

  it('the error carries the offending value', async () => {
    const error = await rejectionOf(boot(LockModule.forRoot({ ttl: -5 })));
    expect((error as LockOptionsError).value).toBe(-5);
    expect((error as LockOptionsError).message).toContain('-5');
  });

  it('valid options boot (the cases above fail for their option, not for any options)', async () => {
    await expect(boot(LockModule.forRoot({ ttl: 1000, wait: 0 }))).resolves.toBeUndefined();
  });
});

const BAD_KEYS: [string, unknown][] = [
  ['an empty string', ''],
  ['a number', 42],
  ['null', null],
  ['undefined', undefined],
  ['an object', { id: 1 }],
  ['an empty array', []],
  ['an array holding a number', ['ok', 7]],
  ['an array holding an empty string', ['ok', '']],
  [`a string over MAX_KEY_LENGTH (${MAX_KEY_LENGTH})`, 'k'.repeat(MAX_KEY_LENGTH + 1)],
];

describe.each(storeRows())('bad keys (%s store)', (_name, fixture) => {
  let store: StoreUnderTest;
  beforeAll(async () => {
    store = await fixture.setup();
  });
  afterAll(() => store?.teardown());
  const apps = trackLockApps();

  /** Every entry point, each with a bad key; resolves with what each call rejected with. */
  async function callEverything(locks: LockService, key: unknown): Promise<unknown[]> {
    const asKey = key as string;
    let ran = false;
    const errors = [
      await rejectionOf(locks.acquire(asKey)),
      await rejectionOf(locks.tryAcquire(asKey)),
      await rejectionOf(locks.withLock(asKey, () => (ran = true))),
    ];
    if (!Array.isArray(key)) errors.push(await rejectionOf(locks.isLocked(asKey)));
    expect(ran).toBe(false);
    return errors;
  }

  it.each(BAD_KEYS)('%s is an InvalidLockKeyError from every method, before any Redis command', async (_title, key) => {
    const { locks } = await apps.start(store.options());
    // A first real lock, so connections are open and their setup commands are behind us.
    const scriptsRun = async (): Promise<number[]> =>
      (await Promise.all(store.servers.map((server) => commandStats(server.url)))).map(
        (stats) => (stats.evalsha ?? 0) + (stats.eval ?? 0),
      );
    const beforeWarmUp = await scriptsRun();
    await (await locks.acquire(uniqueKey('warm-up'))).release();
    // Redlock decides at a quorum: wait until every server has run the warm-up's acquire and release (the
    // servers are shared by the tests of this file, so count from before the warm-up), and on Redlock the
    // question which server each node is, asked once per store from its first acquisition (DistinctServers).
    const warmUpScripts = store.servers.length > 1 ? 3 : 2;
    await eventually(
      async () => (await scriptsRun()).every((count, i) => count >= beforeWarmUp[i] + warmUpScripts),
      5_000,
      'every server ran the warm-up',
    );
    const before = await Promise.all(store.servers.map((server) => commandStats(server.url)));

    for (const error of await callEverything(locks, key)) expect(error).toBeInstanceOf(InvalidLockKeyError);

    const after = await Promise.all(store.servers.map((server) => commandStats(server.url)));
    // Only this test's own INFO reads reached the servers.
    const sent = before.map((stats, i) => {
      const { info: _ownReads, ...rest } = statsDelta(stats, after[i]);
      return rest;
    });
    expect(sent).toEqual(store.servers.map(() => ({})));
  });

  it(`a key of exactly MAX_KEY_LENGTH (${MAX_KEY_LENGTH}) characters is fine`, async () => {
    const { locks } = await apps.start(store.options());
    const key = uniqueKey('long').padEnd(MAX_KEY_LENGTH, 'x');
    const lock = await locks.acquire(key);
    expect(lock.keys).toEqual([key]);
    expect(await locks.isLocked(key)).toBe(true);
    expect(await lock.release()).toBe(true);
  });
});
