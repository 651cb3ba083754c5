import { Logger } from '@nestjs/common';
import { Redis } from 'ioredis';
import { readAppConfig } from '../../sample-app/src/config/app-config';
import { resolveBackend } from '../../sample-app/src/config/backend';

/** The embedded default of `npm run sample`: a private redis-server when installed, in-process otherwise. */
describe('sample app: the embedded default store', () => {
  beforeAll(() => Logger.overrideLogger(['error']));
  afterAll(() => Logger.overrideLogger(['log', 'error', 'warn', 'debug', 'verbose', 'fatal']));

  it('starts a private redis-server that answers, and stops it', async () => {
    const backend = await resolveBackend(readAppConfig({}));
    if (backend.kind !== 'redis' || !backend.embedded) {
      throw new Error(`expected an embedded Redis, got ${JSON.stringify(backend)}`);
    }
    expect(backend.url).toMatch(/^redis:\/\/127\.0\.0\.1:\d+$/);
    const client = new Redis(backend.url, { maxRetriesPerRequest: 0 });
    try {
      expect(await client.ping()).toBe('PONG');
    } finally {
      client.disconnect();
    }
    const pid = backend.embedded.pid as number;
    await backend.embedded.stop();
    expect(() => process.kill(pid, 0)).toThrow();
  });

  it('falls back to the in-process store when redis-server is not installed', async () => {
    const backend = await resolveBackend(readAppConfig({}), '/nonexistent/redis-server');
    expect(backend).toEqual({ kind: 'memory' });
  });
});
