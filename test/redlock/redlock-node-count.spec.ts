import { Logger } from '@nestjs/common';
import { trackLockApps, uniqueKey } from '../support/lock-app';
import { startRedisServers, type RedisProcess } from '../support/redis-server';

/** Redlock over fewer than 3 nodes works, but is never what a user wants: the module says so at startup. */
describe('Redlock over 1 or 2 nodes', () => {
  let servers: RedisProcess[];
  const apps = trackLockApps();
  beforeAll(async () => {
    servers = await startRedisServers(2);
  });
  afterAll(async () => {
    await Promise.all((servers ?? []).map((server) => server.stop()));
  });

  it.each([
    [1, 'Redlock over 1 node: that one Redis decides every lock'],
    [2, 'Redlock over 2 nodes: a lock needs both'],
    [3, undefined],
  ] as const)('%i node(s): locks work, with the startup warning that fits (none for 3)', async (count, warning) => {
    const third = count === 3 ? await startRedisServers(1) : [];
    const warn = vi.spyOn(Logger.prototype, 'warn');
    try {
      const { locks } = await apps.start({ nodes: [...servers, ...third].slice(0, count).map((server) => server.url) });
      const lockWarnings = warn.mock.calls
        .map(([message]) => String(message))
        .filter((message) => message.startsWith('Redlock over'));
      expect(lockWarnings).toEqual(warning === undefined ? [] : [expect.stringContaining(warning)]);
      const lock = await locks.acquire(uniqueKey('few-nodes'));
      expect(await lock.release()).toBe(true);
    } finally {
      warn.mockRestore();
      await Promise.all(third.map((server) => server.stop()));
    }
  });
});
