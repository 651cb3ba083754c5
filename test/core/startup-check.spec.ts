import { ConsoleLogger, type LogLevel } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { LockModule, type LockModuleOptions, LockOptionsError, LockUnavailableError } from '../../lib';
import { findFreePort } from '../support/free-port';
import { type RedisProcess, startRedis } from '../support/redis-server';

/** A store's trouble shows at application bootstrap, in one line and in bounded time, not at the first lock call. */

const PASSWORD = 'startup-pw-5e1d';
const BOUND_MS = 3_000;

class CapturingLogger extends ConsoleLogger {
  readonly lines: { level: LogLevel; context: string; message: string }[] = [];
  constructor() {
    super({ logLevels: ['log', 'warn', 'error', 'fatal'] });
  }
  protected override printMessages(messages: unknown[], context = '', level: LogLevel = 'log'): void {
    for (const message of messages) this.lines.push({ level, context, message: String(message) });
  }
  ofModule(): { level: LogLevel; message: string }[] {
    return this.lines.filter((line) => line.context === 'LockModule').map(({ level, message }) => ({ level, message }));
  }
}

async function boot(
  options: LockModuleOptions,
): Promise<{ logger: CapturingLogger; elapsedMs: number; error?: unknown }> {
  const logger = new CapturingLogger();
  const module = await Test.createTestingModule({ imports: [LockModule.forRoot({ commandTimeout: 500, ...options })] })
    .setLogger(logger)
    .compile();
  const startedAt = performance.now();
  let error: unknown;
  try {
    await module.init();
  } catch (caught) {
    error = caught;
  }
  const elapsedMs = performance.now() - startedAt;
  // NestJS 10 and 11 rethrow a failed init() from close() (they await it first).
  await module.close().catch((closing: unknown) => {
    if (closing !== error) throw closing;
  });
  return { logger, elapsedMs, error };
}

describe('the startup check', () => {
  let redis: RedisProcess;
  let locked: RedisProcess;

  beforeAll(async () => {
    [redis, locked] = await Promise.all([startRedis(), startRedis()]);
    await locked.command('CONFIG', 'SET', 'requirepass', PASSWORD);
  });

  afterAll(async () => {
    await Promise.all([redis?.stop(), locked?.stop()]);
  });

  it('logs one line when the store answers, naming it without a password', async () => {
    const { logger, error } = await boot({ redis: `redis://:${PASSWORD}@${locked.host}:${locked.port}` });
    expect(error).toBeUndefined();
    expect(logger.ofModule()).toEqual([
      {
        level: 'log',
        message: expect.stringMatching(
          new RegExp(
            `^Lock store ready: Redis at redis://:\\*\\*\\*@127\\.0\\.0\\.1:${locked.port}, keyPrefix 'lock:' \\(answered in [\\d.]+ ms\\)$`,
          ),
        ),
      },
    ]);
  });

  it('a wrong password: one warning naming the authentication failure, and the application boots', async () => {
    const { logger, error, elapsedMs } = await boot({
      redis: `redis://:wrong-${PASSWORD}@${locked.host}:${locked.port}`,
    });
    expect(error).toBeUndefined();
    expect(elapsedMs).toBeLessThan(BOUND_MS);
    const lines = logger.ofModule();
    expect(lines).toHaveLength(1);
    expect(lines[0].level).toBe('warn');
    expect(lines[0].message).toMatch(
      /^Lock store not ready at startup \(Redis at redis:\/\/:\*\*\*@127\.0\.0\.1:\d+, keyPrefix 'lock:'\): .*WRONGPASS.*authentication failed/,
    );
    expect(lines[0].message).toContain("startupCheck: 'fail'");
    expect(logger.lines.map((line) => line.message).join('\n')).not.toContain(PASSWORD);
  });

  it('nobody listening: the warning says to check that Redis is reachable', async () => {
    const { logger, elapsedMs } = await boot({ redis: `redis://127.0.0.1:${await findFreePort()}` });
    expect(elapsedMs).toBeLessThan(BOUND_MS);
    const [line] = logger.ofModule();
    expect(line.level).toBe('warn');
    expect(line.message).toMatch(/ECONNREFUSED.*Check that Redis is reachable/);
  });

  it('a server that does not answer holds the bootstrap no longer than the command timeout', async () => {
    redis.pause();
    try {
      const { logger, elapsedMs } = await boot({ redis: redis.url, commandTimeout: 300 });
      expect(elapsedMs).toBeLessThan(BOUND_MS);
      expect(logger.ofModule()[0]).toMatchObject({
        level: 'warn',
        message: expect.stringContaining('no answer within 300 ms'),
      });
    } finally {
      redis.resume();
    }
  });

  it("startupCheck: 'fail' fails the bootstrap with the LockUnavailableError, password cut", async () => {
    const { error } = await boot({
      redis: `redis://:wrong-${PASSWORD}@${locked.host}:${locked.port}`,
      startupCheck: 'fail',
    });
    expect(error).toBeInstanceOf(LockUnavailableError);
    expect((error as Error).message).toMatch(/authentication failed/);
    expect((error as Error).message).not.toContain(PASSWORD);
  });

  it("an ACL user that may PING but not run scripts: the warning names the ACL's refusal", async () => {
    await redis.command('ACL', 'SETUSER', 'pinger', 'on', `>${PASSWORD}`, '~*', '+@connection');
    const { logger } = await boot({ redis: `redis://pinger:${PASSWORD}@${redis.host}:${redis.port}` });
    const [line] = logger.ofModule();
    expect(line.level).toBe('warn');
    expect(line.message).toMatch(/NOPERM.*ACL refused the connection's user/);
  });

  it("startupCheck: 'fail' closes the connections it opened before failing the bootstrap", async () => {
    const clients = async (): Promise<number> =>
      String(await redis.command('CLIENT', 'LIST'))
        .split('\n')
        .filter((line) => line.includes('cmd=') && !line.includes('cmd=client')).length;
    await redis.command('ACL', 'SETUSER', 'pinger', 'on', `>${PASSWORD}`, '~*', '+@connection');
    const before = await clients();
    // As an application whose bootstrap failed: nobody calls close() (Nest runs no shutdown hook then).
    const module = await Test.createTestingModule({
      imports: [
        LockModule.forRoot({ redis: `redis://pinger:${PASSWORD}@${redis.host}:${redis.port}`, startupCheck: 'fail' }),
      ],
    })
      .setLogger(new CapturingLogger())
      .compile();
    const error = await module.init().then(
      () => undefined,
      (caught: unknown) => caught,
    );
    expect(error).toBeInstanceOf(LockUnavailableError);
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(await clients()).toBe(before);
  });

  it('Redlock: ready while a quorum answers; below it, the warning names each node that did not', async () => {
    const gone = [await findFreePort(), await findFreePort()].map((port) => `redis://127.0.0.1:${port}`);
    const quorum = await boot({ nodes: [redis.url, `redis://:${PASSWORD}@127.0.0.1:${locked.port}`, gone[0]] });
    expect(quorum.logger.ofModule()).toEqual([
      { level: 'log', message: expect.stringMatching(/^Lock store ready: Redlock over 3 nodes/) },
    ]);

    const below = await boot({ nodes: [redis.url, ...gone] });
    const [line] = below.logger.ofModule();
    expect(line.level).toBe('warn');
    expect(line.message).toMatch(
      /only 1 of 3 Redlock nodes answered.*nodes\[1\]: .*ECONNREFUSED.*nodes\[2\]: .*ECONNREFUSED/,
    );
  });

  it("'off' and the in-process store log nothing of it", async () => {
    expect((await boot({ redis: redis.url, startupCheck: 'off' })).logger.ofModule()).toEqual([]);
    expect((await boot({})).logger.ofModule().filter((line) => line.message.includes('Lock store'))).toEqual([]);
  });

  it('any other value is a LockOptionsError', async () => {
    const { error } = await boot({ redis: redis.url, startupCheck: 'yes' as never }).catch((caught: unknown) => ({
      error: caught,
    }));
    expect(error).toBeInstanceOf(LockOptionsError);
  });
});
