import { ConsoleLogger, type INestApplication, type ModuleMetadata } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import type { Server } from 'node:http';
import { LockModule, LockService, type LockModuleOptions } from '../../../lib';

/** A real Nest HTTP application listening on 127.0.0.1, with LockModule on a real Redis. */
export interface LockedApp {
  readonly app: INestApplication;
  readonly locks: LockService;
  readonly server: Server;
  /** `http://127.0.0.1:<port>` */
  readonly baseUrl: string;
  close(): Promise<void>;
}

function quietLogger(): ConsoleLogger {
  return new ConsoleLogger({ logLevels: ['fatal'] });
}

/**
 * Compiles `scenario` with a global LockModule on `redisUrl`, and listens on a free port of 127.0.0.1.
 * Bootstrap errors (e.g. a LockOptionsError from the explorer) reject.
 */
export async function startLockedApp(
  redisUrl: string,
  scenario: ModuleMetadata,
  options: LockModuleOptions = {},
): Promise<LockedApp> {
  const lockModule = LockModule.forRoot({ redis: redisUrl, isGlobal: true, ...options });
  const module = await Test.createTestingModule({
    ...scenario,
    // The scenario's modules first: a global one among them (ScheduleModule) then initialises before
    // LockModule, the order that matters for @Cron.
    imports: [...(scenario.imports ?? []), lockModule],
  })
    .setLogger(quietLogger())
    .compile();
  const app = module.createNestApplication({ logger: quietLogger() });
  try {
    await app.listen(0, '127.0.0.1');
  } catch (error) {
    // A failed init leaves app.close() a no-op (it rethrows the init error): close the store directly,
    // or its Redis connection would keep Jest alive.
    await module
      .get(LockService)
      .onApplicationShutdown()
      .catch(() => undefined);
    throw error;
  }
  const server = app.getHttpServer() as Server;
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  let closing: Promise<void> | undefined;
  return {
    app,
    locks: app.get(LockService),
    server,
    baseUrl: `http://127.0.0.1:${port}`,
    close: () => (closing ??= app.close()),
  };
}
