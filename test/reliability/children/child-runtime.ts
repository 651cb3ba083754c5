/**
 * The child side of the parent/child protocol of this suite (see ../support/child-process.ts): the
 * config the parent passed, messages both ways over the IPC channel, and a report of anything that goes
 * wrong outside the scenario's own code (an unhandled rejection, an uncaught exception) instead of a
 * silent crash.
 */
import { ConsoleLogger, type INestApplicationContext, Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import Redis from 'ioredis';
import { LockModule, LockService, type LockModuleOptions } from '../../../lib';

/** Every message carries its type; the rest is the scenario's. */
export interface ChildMessage {
  readonly type: string;
}

/** Sent by the runtime when the child fails outside the scenario's code. */
export interface FaultMessage extends ChildMessage {
  readonly type: 'fault';
  readonly kind: 'unhandledRejection' | 'uncaughtException' | 'scenario';
  readonly detail: string;
}

/** The JSON config the parent passed in RELIABILITY_CHILD_CONFIG. */
export function childConfig<T>(): T {
  const raw = process.env.RELIABILITY_CHILD_CONFIG;
  if (!raw) throw new Error('RELIABILITY_CHILD_CONFIG is not set: this script is started by the reliability suite');
  return JSON.parse(raw) as T;
}

export function send<T extends ChildMessage>(message: T): void {
  process.send?.(message);
}

const inbox: ChildMessage[] = [];
const waiting: { type: string; resolve: (message: ChildMessage) => void }[] = [];
process.on('message', (message: ChildMessage) => {
  const index = waiting.findIndex((waiter) => waiter.type === message.type);
  if (index >= 0) waiting.splice(index, 1)[0].resolve(message);
  else inbox.push(message);
});

/** The next message of `type` from the parent (one already received counts). */
export function receive<T extends ChildMessage>(type: T['type']): Promise<T> {
  const index = inbox.findIndex((message) => message.type === type);
  if (index >= 0) return Promise.resolve(inbox.splice(index, 1)[0] as T);
  return new Promise((resolve) => waiting.push({ type, resolve: resolve as (message: ChildMessage) => void }));
}

function describe(error: unknown): string {
  return error instanceof Error ? `${error.name}: ${error.message}\n${error.stack ?? ''}` : String(error);
}

/**
 * Runs the scenario and reports how it ended. Unhandled rejections and uncaught exceptions are reported
 * as faults (the parent fails the test on them), never swallowed. The IPC channel going away means the
 * parent is gone: exit.
 */
export function runChild(scenario: () => Promise<void>): void {
  process.on('unhandledRejection', (reason) => {
    send({ type: 'fault', kind: 'unhandledRejection', detail: describe(reason) } as FaultMessage);
  });
  process.on('uncaughtException', (error) => {
    send({ type: 'fault', kind: 'uncaughtException', detail: describe(error) } as FaultMessage);
    process.exitCode = 1;
  });
  process.on('disconnect', () => process.exit(process.exitCode ?? 0));
  scenario().catch((error: unknown) => {
    send({ type: 'fault', kind: 'scenario', detail: describe(error) } as FaultMessage);
    process.exitCode = 1;
  });
}

/** Only errors reach the parent's output: the scenarios log nothing they expect. */
export function quietLogger(): ConsoleLogger {
  return new ConsoleLogger({ logLevels: ['error', 'fatal'] });
}

/** A Nest application context holding just LockModule, as a worker process of a real app would. */
export async function createLockContext(options: LockModuleOptions): Promise<INestApplicationContext> {
  @Module({ imports: [LockModule.forRoot(options)] })
  class ChildModule {}
  return NestFactory.createApplicationContext(ChildModule, { logger: quietLogger() });
}

/** A worker of the history checkers, started: its LockService, its client of the data Redis, and its end. */
export interface HistoryWorker {
  readonly locks: LockService;
  readonly data: Redis;
  /** Sends the report, then closes the data client and the Nest context. */
  finish(report: ChildMessage): Promise<void>;
}

/**
 * The common start of a history worker (history-worker.ts, primitives-history-worker.ts): its Nest context
 * and a client of the data Redis, then 'ready', and resolves at the parent's 'go'.
 */
export async function startHistoryWorker(options: LockModuleOptions, dataUrl: string): Promise<HistoryWorker> {
  const app = await createLockContext(options);
  const data = new Redis(dataUrl, { maxRetriesPerRequest: 1 });
  await data.ping();
  send({ type: 'ready' });
  await receive('go');
  return {
    locks: app.get(LockService),
    data,
    finish: async (report) => {
      send(report);
      data.disconnect();
      await app.close();
    },
  };
}
