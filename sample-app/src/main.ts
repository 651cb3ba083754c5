import 'reflect-metadata';
import { Logger, type INestApplication } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { AppModule } from './app.module';
import { readAppConfig } from './config/app-config';

const HOST = '127.0.0.1';
/** A shutdown that takes longer than this is cut short. */
const SHUTDOWN_TIMEOUT_MS = 5_000;
const logger = new Logger('Bank');

async function bootstrap(): Promise<void> {
  const config = readAppConfig(process.env);
  const app = await NestFactory.create(AppModule.forRoot(config));
  closeOnSignals(app);
  await app.listen(config.port, HOST);
  logger.log(
    `Listening on ${await app.getUrl()} as instance ${config.instance}` +
      (config.locks ? '' : ' with LOCKS=off (transfers unlocked: race demo only)'),
  );
}

/**
 * Ctrl-C / SIGTERM: close the app (Nest's shutdown hooks: held locks are released, connections closed),
 * then exit. Not app.enableShutdownHooks(): after closing it re-raises the signal, which ends the process
 * without Node's 'exit' event, and that event is what stops the embedded redis-server, last, once the
 * locks held on it were released.
 */
function closeOnSignals(app: INestApplication): void {
  const close = (signal: NodeJS.Signals): void => {
    logger.log(`${signal}: shutting down`);
    const forced = setTimeout(() => process.exit(1), SHUTDOWN_TIMEOUT_MS);
    forced.unref();
    app.close().then(
      () => process.exit(0),
      (error: unknown) => {
        logger.error(`Shutdown failed: ${(error as Error).message}`);
        process.exit(1);
      },
    );
  };
  process.once('SIGINT', close);
  process.once('SIGTERM', close);
}

bootstrap().catch((error: unknown) => {
  logger.error(error instanceof Error ? (error.stack ?? error.message) : String(error));
  process.exit(1);
});
