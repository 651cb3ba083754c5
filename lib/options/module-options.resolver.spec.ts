import { inspect } from 'node:util';
import Redis from 'ioredis';
import Valkey from 'iovalkey';
import { createClient, createCluster } from 'redis';
import { createClient as createClientV4 } from 'redis-v4';
import { LockOptionsError } from '../errors';
import type { LockModuleOptions } from './lock-options.interface';
import { LOCK_DEFAULTS, resolveLockOptions } from './module-options.resolver';

describe('resolveLockOptions', () => {
  it('fills the documented defaults', () => {
    expect(resolveLockOptions({})).toMatchObject(LOCK_DEFAULTS);
  });

  it('errorMapping is on unless turned off', () => {
    expect(resolveLockOptions({}).errorMapping).toBe(true);
    expect(resolveLockOptions({ errorMapping: false }).errorMapping).toBe(false);
  });

  it(
    'undefined options (a forRootAsync factory that returned nothing, ' +
      'or failed) are a LockOptionsError, not an in-process store',
    () => {
      expect(() => resolveLockOptions(undefined)).toThrow(
        new LockOptionsError(
          'options',
          undefined,
          'an object of LockModuleOptions from the forRootAsync factory ({} for the defaults)',
        ),
      );
    },
  );

  it.each<[string, unknown]>([
    ['ttl', { ttl: 0 }],
    ['ttl', { ttl: -5 }],
    ['ttl', { ttl: Number.NaN }],
    ['ttl', { ttl: Infinity }],
    ['ttl', { ttl: '1000' }],
    ['wait', { wait: -1 }],
    ['wait', { wait: Number.NaN }],
    ['maxHold', { maxHold: 0 }],
    ['driftFactor', { driftFactor: 0.7 }],
    ['driftFactor', { driftFactor: -0.1 }],
    ['keyPrefix', { keyPrefix: 5 }],
    ['autoExtend', { autoExtend: 'yes' }],
    ['reentrant', { reentrant: 1 }],
    ['errorMapping', { errorMapping: 'off' }],
    ['errorMapping', { errorMapping: 0 }],
    ['commandTimeout', { commandTimeout: 0 }],
    ['nodes', { redis: 'redis://127.0.0.1:1', nodes: ['redis://127.0.0.1:2'] }],
    ['nodes', { nodes: [] }],
    ['nodes', { nodes: 'redis://127.0.0.1:1' }],
    ['nodes[1]', { nodes: ['redis://127.0.0.1:1', 42] }],
    // The same server twice would count its vote twice: by URL (another database of it too), by options, mixed.
    ['nodes[1]', { nodes: ['redis://127.0.0.1:7001', 'redis://127.0.0.1:7001/2', 'redis://127.0.0.1:7003'] }],
    ['nodes[2]', { nodes: ['redis://a.example:7001', 'redis://b.example:7001', 'redis://A.example:7001'] }],
    ['nodes[1]', { nodes: [{ host: 'h', port: 7001 }, 'redis://h:7001', 'redis://h:7003'] }],
    ['nodes[1]', { nodes: ['redis://localhost', { port: 6379 }, 'redis://localhost:7003'] }],
    ['redis', { redis: 42 }],
    ['redis', { redis: 'localhost:6379' }],
    ['redis', { redis: { foo: 1 } }],
    ['redis', { redis: [] }],
    ['redis.port', { redis: { port: 70000 } }],
    ['redis.host', { redis: { host: 1 } }],
    ['options', 'redis://127.0.0.1'],
    ['ttL', { ttL: 1000 }],
    ['url', { url: 'redis://127.0.0.1' }],
    ['minReplicas', { redis: 'redis://127.0.0.1:1', minReplicas: 1 }],
    ['minReplicas', { minReplicas: { replicas: 1, timeout: 100 } }],
    ['minReplicas.replicas', { redis: 'redis://127.0.0.1:1', minReplicas: { replicas: 0, timeout: 100 } }],
    ['minReplicas.replicas', { redis: 'redis://127.0.0.1:1', minReplicas: { replicas: 1.5, timeout: 100 } }],
    ['minReplicas.timeout', { redis: 'redis://127.0.0.1:1', minReplicas: { replicas: 1, timeout: 0 } }],
    ['minReplicas.timeout', { redis: 'redis://127.0.0.1:1', minReplicas: { replicas: 1, timeout: Infinity } }],
    ['minReplicas.timeout', { redis: 'redis://127.0.0.1:1', ttl: 1_000, minReplicas: { replicas: 1, timeout: 1_000 } }],
    ['minReplicas.timeout', { redis: 'redis://127.0.0.1:1', minReplicas: { replicas: 1 } }],
    ['minReplicas.replica', { redis: 'redis://127.0.0.1:1', minReplicas: { replica: 1, replicas: 1, timeout: 100 } }],
    ['nodes[0]', { nodes: [createCluster({ rootNodes: [{ url: 'redis://127.0.0.1:1' }] })] }],
    [
      'minReplicas',
      {
        redis: createCluster({ rootNodes: [{ url: 'redis://127.0.0.1:1' }] }),
        minReplicas: { replicas: 1, timeout: 100 },
      },
    ],
    ['minHold', { maxHold: 60_000, minHold: 120_000 }],
    ['minReplicas.timeout', { redis: 'redis://127.0.0.1:1', ttl: 1_000, minReplicas: { replicas: 1, timeout: 400 } }],
    ['minHold', { minHold: 1e300 }],
    ['ttl', { ttl: 1e300 }],
    ['maxHold', { maxHold: 2 ** 60 }],
  ])('rejects a bad %s with a LockOptionsError naming it', (option, options) => {
    let caught: unknown;
    try {
      resolveLockOptions(options as LockModuleOptions);
    } catch (error) {
      caught = error;
    }
    expect(caught).toBeInstanceOf(LockOptionsError);
    expect((caught as LockOptionsError).option).toBe(option);
    expect((caught as Error).message).toContain(`'${option}'`);
  });

  it('names a connection URL without its password (a node given twice, a bad `redis`)', () => {
    const error = (() => {
      try {
        resolveLockOptions({ nodes: ['redis://:s3cret@h:7001', 'redis://app:s3cret@h:7001/1', 'redis://h:7003'] });
      } catch (caught) {
        return caught as Error;
      }
      return undefined;
    })();
    expect(error).toBeInstanceOf(LockOptionsError);
    expect(error?.message).toContain('redis://app:***@h:7001/1');
    expect(error?.message).not.toContain('s3cret');
    // Every option error prints a URL so: here a `redis` of the wrong scheme.
    expect(() => resolveLockOptions({ redis: 'http://app:s3cret@h:7001' })).toThrow(
      /Invalid lock option 'redis': "http:\/\/app:\*\*\*@h:7001\/"/,
    );
  });

  it.each<[string, LockModuleOptions]>([
    ['a URL of the wrong scheme', { redis: 'http://:s3cret@127.0.0.1:6401' }],
    [
      'a node given twice',
      { nodes: ['redis://:s3cret@127.0.0.1:6401', 'redis://:s3cret@127.0.0.1:6401/0', 'redis://h:3'] },
    ],
    [
      'options with a password given twice',
      {
        nodes: [{ host: 'h', port: 1, password: 's3cret' }, { host: 'h', port: 1, password: 's3cret' }, 'redis://g:1'],
      },
    ],
    ['redis and nodes together', { redis: 'redis://h:1', nodes: ['redis://:s3cret@g:2'] }],
    ["a password with an unencoded '#'", { redis: 'redis://default:s3cr#t@127.0.0.1:6401' }],
    ['a port above 65535', { redis: 'redis://:s3cret@127.0.0.1:99999' }],
    ['a password in the query of a URL that does not parse', { redis: 'redis://127.0.0.1:99999/0?password=s3cret' }],
    ['a password in the query of a wrong scheme', { redis: 'http://127.0.0.1:6401/0?password=s3cret' }],
    ['a leading space (an env file)', { redis: ' redis://:s3cr#t@127.0.0.1:6401' }],
    ['one slash after the scheme', { redis: 'redis:/:s3cret@127.0.0.1:6401' }],
  ])('%s: the error, printed whole as a log prints it, shows no password', (_case, options) => {
    let caught: unknown;
    try {
      resolveLockOptions(options);
    } catch (error) {
      caught = error;
    }
    expect(caught).toBeInstanceOf(LockOptionsError);
    // Nest's bootstrap handler prints the error with util.inspect: its own properties, not only the message.
    expect(inspect(caught, { depth: 5 })).not.toMatch(/s3cr/);
    expect((caught as Error).message).not.toMatch(/s3cr/);
    expect(JSON.stringify(caught)).not.toMatch(/s3cr/);
    // The value as given is still there for code that handles the error.
    expect((caught as LockOptionsError).value).toBeDefined();
  });

  it("a redis:// URL that does not parse is a LockOptionsError naming the option, not ioredis' TypeError", () => {
    expect(() => resolveLockOptions({ redis: 'redis://default:s3cr#t@127.0.0.1:6401' })).toThrow(
      /^Invalid lock option 'redis': "redis:\/\/default:\*\*\*@127\.0\.0\.1:6401"\. Expected a URL that parses: in a password, '#'/,
    );
    expect(() => resolveLockOptions({ nodes: ['redis://a:1', 'redis://:x@b:99999', 'redis://c:1'] })).toThrow(
      /Invalid lock option 'nodes\[1\]': "redis:\/\/:\*\*\*@b:99999"/,
    );
    // Encoded, it is accepted.
    expect(() =>
      resolveLockOptions({ redis: `redis://default:${encodeURIComponent('s3cr#t')}@127.0.0.1:6401` }),
    ).not.toThrow();
  });

  it('accepts URLs, options and client instances, and Infinity for wait and maxHold', () => {
    const client = new Redis({ lazyConnect: true });
    expect(() => resolveLockOptions({ redis: 'redis://127.0.0.1:6380/0' })).not.toThrow();
    expect(() => resolveLockOptions({ redis: { host: '127.0.0.1', port: 6380 } })).not.toThrow();
    expect(() => resolveLockOptions({ redis: client, wait: Infinity, maxHold: Infinity })).not.toThrow();
    expect(() => resolveLockOptions({ nodes: [client, 'rediss://h:1', { port: 1 }] })).not.toThrow();
    expect(() =>
      resolveLockOptions({
        nodes: ['redis://h:7001', 'redis://h:7002', { host: 'h', port: 7003 }, 'redis://g:7001', '/tmp/r.sock'],
      }),
    ).not.toThrow();
    // One client lent twice is one server voting twice.
    expect(() => resolveLockOptions({ nodes: [client, 'redis://h:7001', client] })).toThrow(LockOptionsError);
    client.disconnect();
  });

  it('accepts node-redis (v4, v5) clients and clusters and iovalkey clients, recognised by shape', () => {
    const valkey = new Valkey({ lazyConnect: true });
    for (const redis of [
      createClient(),
      createCluster({ rootNodes: [{ url: 'redis://127.0.0.1:1' }] }),
      createClientV4(),
      valkey,
    ]) {
      expect(() => resolveLockOptions({ redis })).not.toThrow();
    }
    expect(() => resolveLockOptions({ nodes: [createClient(), createClientV4(), valkey] })).not.toThrow();
    valkey.disconnect();
  });

  it('minReplicas: validated and kept; off by default', () => {
    expect(resolveLockOptions({ redis: 'redis://127.0.0.1:1' }).minReplicas).toBeUndefined();
    expect(
      resolveLockOptions({ redis: 'redis://127.0.0.1:1', minReplicas: { replicas: 2, timeout: 50 } }).minReplicas,
    ).toEqual({
      replicas: 2,
      timeout: 50,
    });
    expect(
      resolveLockOptions({ nodes: ['redis://127.0.0.1:1'], minReplicas: { replicas: 1, timeout: 50 } }).minReplicas,
    ).toEqual({
      replicas: 1,
      timeout: 50,
    });
  });
});
