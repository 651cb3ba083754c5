import { ConfigError, readAppConfig } from '../../sample-app/src/config/app-config';
import { lockModuleOptions } from '../../sample-app/src/config/backend';

/** How the sample app reads its environment (PORT, REDIS_URL, REDIS_NODES, LOCK_STORE, LOCKS, INTEREST_RATE). */
describe('sample app configuration', () => {
  it('defaults: port 3000, the embedded store, locks on', () => {
    expect(readAppConfig({})).toMatchObject({
      port: 3000,
      store: { kind: 'embedded' },
      locks: true,
      interestRate: 0.01,
    });
  });

  it.each([
    [{ REDIS_URL: 'redis://127.0.0.1:7000' }, { kind: 'redis', url: 'redis://127.0.0.1:7000' }],
    [
      { REDIS_NODES: 'redis://127.0.0.1:7001, redis://127.0.0.1:7002,redis://127.0.0.1:7003' },
      { kind: 'redlock', nodes: ['redis://127.0.0.1:7001', 'redis://127.0.0.1:7002', 'redis://127.0.0.1:7003'] },
    ],
    [{ LOCK_STORE: 'memory' }, { kind: 'memory' }],
    [{ REDIS_URL: '' }, { kind: 'embedded' }],
  ])('%j → store %j', (env, store) => {
    expect(readAppConfig(env).store).toEqual(store);
  });

  it('reads PORT and LOCKS=off', () => {
    expect(readAppConfig({ PORT: '4010', LOCKS: 'off' })).toMatchObject({ port: 4010, locks: false });
    expect(readAppConfig({ PORT: '4010' }).instance).toBe(`port 4010, pid ${process.pid}`);
  });

  it.each([
    [{ PORT: 'http' }, 'PORT'],
    [{ PORT: '70000' }, 'PORT'],
    [{ REDIS_URL: '127.0.0.1:6379' }, 'REDIS_URL'],
    [{ REDIS_URL: 'redis://a', REDIS_NODES: 'redis://b' }, 'REDIS_NODES'],
    [{ LOCK_STORE: 'memory', REDIS_URL: 'redis://a' }, 'LOCK_STORE'],
    [{ LOCK_STORE: 'disk' }, 'LOCK_STORE'],
    [{ LOCKS: 'no' }, 'LOCKS'],
    [{ INTEREST_RATE: '-1' }, 'INTEREST_RATE'],
  ])('%j is refused, naming %s', (env, variable) => {
    expect(() => readAppConfig(env)).toThrow(ConfigError);
    expect(() => readAppConfig(env)).toThrow(new RegExp(`^${variable}=`));
  });

  it('maps the backend to LockModule options', () => {
    const common = { keyPrefix: 'bank:lock:', ttl: 10_000, wait: 5_000 };
    expect(lockModuleOptions({ kind: 'redis', url: 'redis://a' })).toEqual({ ...common, redis: 'redis://a' });
    expect(lockModuleOptions({ kind: 'redlock', nodes: ['redis://a', 'redis://b'] })).toEqual({
      ...common,
      nodes: ['redis://a', 'redis://b'],
    });
    expect(lockModuleOptions({ kind: 'memory' })).toEqual(common);
  });
});
