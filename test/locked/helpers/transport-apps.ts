import type { INestApplication, INestMicroservice, LoggerService, ModuleMetadata } from '@nestjs/common';
import { ClientProxyFactory, Transport, type ClientProxy } from '@nestjs/microservices';
import { FastifyAdapter, type NestFastifyApplication } from '@nestjs/platform-fastify';
import { Test, type TestingModule } from '@nestjs/testing';
import type { Server } from 'node:http';
import { io, type Socket } from 'socket.io-client';
import { LockModule, LockService, type LockModuleOptions } from '../../../lib';
import { findFreePort } from '../../support/free-port';

/**
 * Real Nest applications on each transport, with a global LockModule on a real Redis, for the transport
 * error tests. Every one binds 127.0.0.1 only, and records what Nest and the library log.
 */

export type LogLevel = 'log' | 'error' | 'warn' | 'debug' | 'verbose' | 'fatal';

export interface LogEntry {
  readonly level: LogLevel;
  readonly message: string;
  /** The Logger context (`LockInterceptor`, `ExceptionsHandler`, ...), when Nest passed one. */
  readonly context?: string;
}

/** A Nest logger that keeps every entry, at every level, so tests can check what was logged and how. */
export class RecordingLogger implements LoggerService {
  readonly entries: LogEntry[] = [];

  log(message: unknown, ...rest: unknown[]): void {
    this.record('log', message, rest);
  }
  error(message: unknown, ...rest: unknown[]): void {
    this.record('error', message, rest);
  }
  warn(message: unknown, ...rest: unknown[]): void {
    this.record('warn', message, rest);
  }
  debug(message: unknown, ...rest: unknown[]): void {
    this.record('debug', message, rest);
  }
  verbose(message: unknown, ...rest: unknown[]): void {
    this.record('verbose', message, rest);
  }
  fatal(message: unknown, ...rest: unknown[]): void {
    this.record('fatal', message, rest);
  }

  /** Entries logged since `from` (an earlier `entries.length`) at `level`. */
  since(from: number, level?: LogLevel): LogEntry[] {
    return this.entries.slice(from).filter((entry) => !level || entry.level === level);
  }

  private record(level: LogLevel, message: unknown, rest: unknown[]): void {
    // Nest passes the context last, as a string.
    const context = typeof rest.at(-1) === 'string' ? (rest.at(-1) as string) : undefined;
    const text = message instanceof Error ? `${message.name}: ${message.message}` : String(message);
    this.entries.push({ level, message: text, context });
  }
}

async function compile(
  redisUrl: string,
  scenario: ModuleMetadata,
  options: LockModuleOptions,
  logger: LoggerService,
): Promise<TestingModule> {
  const lockModule = LockModule.forRoot({ redis: redisUrl, isGlobal: true, ...options });
  return Test.createTestingModule({ ...scenario, imports: [...(scenario.imports ?? []), lockModule] })
    .setLogger(logger)
    .compile();
}

/** A failed init leaves app.close() a no-op: close the store directly, or its connection keeps the run alive. */
async function closeStoreAfterFailedStart(module: TestingModule, error: unknown): Promise<never> {
  await module
    .get(LockService)
    .onApplicationShutdown()
    .catch(() => undefined);
  throw error;
}

export interface HttpTransportApp {
  readonly app: INestApplication;
  readonly server: Server;
  /** `http://127.0.0.1:<port>` */
  readonly baseUrl: string;
  close(): Promise<void>;
}

/**
 * An HTTP application on Express (Nest's default) or Fastify, listening on a free port of 127.0.0.1.
 * `configure` runs before it listens (`app.useGlobalFilters(…)`).
 */
export async function startHttpApp(
  platform: 'express' | 'fastify',
  redisUrl: string,
  scenario: ModuleMetadata,
  logger: LoggerService,
  options: LockModuleOptions = {},
  configure?: (app: INestApplication) => void,
): Promise<HttpTransportApp> {
  const module = await compile(redisUrl, scenario, options, logger);
  const app =
    platform === 'fastify'
      ? module.createNestApplication<NestFastifyApplication>(new FastifyAdapter(), { logger })
      : module.createNestApplication({ logger });
  configure?.(app);
  try {
    await app.listen(0, '127.0.0.1');
  } catch (error) {
    return closeStoreAfterFailedStart(module, error);
  }
  const server = app.getHttpServer() as Server;
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  let closing: Promise<void> | undefined;
  return { app, server, baseUrl: `http://127.0.0.1:${port}`, close: () => (closing ??= app.close()) };
}

export interface TcpTransportApp {
  readonly app: INestMicroservice;
  /** A real ClientProxy connected to the microservice. */
  readonly client: ClientProxy;
  close(): Promise<void>;
}

/** A TCP microservice on a free port of 127.0.0.1, and a connected ClientProxy. */
export async function startTcpMicroservice(
  redisUrl: string,
  scenario: ModuleMetadata,
  logger: LoggerService,
  options: LockModuleOptions = {},
): Promise<TcpTransportApp> {
  const module = await compile(redisUrl, scenario, options, logger);
  const port = await findFreePort();
  const app = module.createNestMicroservice({ transport: Transport.TCP, options: { host: '127.0.0.1', port }, logger });
  try {
    await app.listen();
  } catch (error) {
    return closeStoreAfterFailedStart(module, error);
  }
  const client = ClientProxyFactory.create({ transport: Transport.TCP, options: { host: '127.0.0.1', port } });
  await client.connect();
  let closing: Promise<void> | undefined;
  return {
    app,
    client,
    close: () =>
      (closing ??= (async () => {
        await client.close();
        await app.close();
      })()),
  };
}

/** A socket.io client of `baseUrl` (a gateway without its own port shares the HTTP server), connected. */
export async function connectSocket(baseUrl: string): Promise<Socket> {
  const socket = io(baseUrl, { transports: ['websocket'], forceNew: true, reconnection: false });
  await new Promise<void>((resolve, reject) => {
    socket.once('connect', () => resolve());
    socket.once('connect_error', reject);
  });
  return socket;
}
