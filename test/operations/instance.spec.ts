import os from 'node:os';
import { LockModule, LockOptionsError } from '../../lib';
import { createLockApp, trackLockApps, uniqueKey } from '../support/lock-app';
import { startRedis, type RedisProcess } from '../support/redis-server';

/** The `instance` option: who holds a lease is recorded in the lease itself, the token left whole. */
describe('instance (ownership recorded with each lease)', () => {
  let redis: RedisProcess;
  beforeAll(async () => {
    redis = await startRedis();
  });
  afterAll(() => redis?.stop());
  const apps = trackLockApps();

  it('defaults to <hostname>:<pid>, stored beside the 128-bit token in the same value (no extra command)', async () => {
    const { locks } = await apps.start({ redis: redis.url });
    const key = uniqueKey('owned');
    const lock = await locks.acquire(key);
    expect(lock.token).toMatch(/^[0-9a-f]{32}$/);
    expect(await redis.command('GET', `lock:{${key}}`)).toBe(`${lock.token}|${os.hostname()}:${process.pid}`);
    expect((await locks.inspect(key))?.holders[0].instance).toBe(`${os.hostname()}:${process.pid}`);
    // Extend and release compare the whole value: they still work, and a bare token is not the holder.
    await lock.extend();
    expect(await lock.release()).toBe(true);
  });

  it('takes any name an operator recognises', async () => {
    const { locks } = await apps.start({ redis: redis.url, instance: 'payments|eu-west-1|pod-7' });
    const key = uniqueKey('named');
    await locks.withLock(key, async () => {
      expect((await locks.inspect(key))?.holders[0].instance).toBe('payments|eu-west-1|pod-7');
    });
  });

  it.each([[''], [42], ['x'.repeat(257)], ['tab\there']])(
    'refuses %j with a LockOptionsError at bootstrap',
    async (instance) => {
      await expect(createLockApp({ redis: redis.url, instance } as never)).rejects.toThrow(LockOptionsError);
      expect(() => LockModule.forRoot({ instance: instance as string })).not.toThrow(); // checked once resolved, with the others
    },
  );
});
