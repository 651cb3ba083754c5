/**
 * One instance of a deployment whose job must run on one instance at a time (../../leader/leader-handover.spec.ts):
 * a Nest application context with a @Leader method. While it leads, the method acts every few ms and tells the
 * parent each time, after reading its term's signal; once the signal reads aborted it says so and returns. The
 * parent stops it gracefully ('stop': app.close()), kills it (SIGKILL) or freezes it (SIGSTOP, SIGCONT).
 */
import { Injectable, Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { Leader, LockModule, type LeaderTerm, type LockModuleOptions } from '../../../lib';
import { type ChildMessage, childConfig, quietLogger, receive, runChild, send } from './child-runtime';

export interface LeaderCandidateConfig {
  readonly lockOptions: LockModuleOptions;
  readonly name: string;
  readonly ttl: number;
}

/** Wall-clock ms with sub-ms precision, comparable across processes of one machine. */
function wallClock(): number {
  return performance.timeOrigin + performance.now();
}

export interface ElectedMessage extends ChildMessage {
  readonly type: 'elected';
  readonly instance: string;
  readonly term: number;
  readonly at: number;
}

/** One act of the leader's work: made only after its signal read not aborted. */
export interface ActMessage extends ChildMessage {
  readonly type: 'act';
  readonly term: number;
  readonly at: number;
}

/** The first read of the signal that said aborted, and its reason's class. */
export interface AbortedReadMessage extends ChildMessage {
  readonly type: 'aborted-read';
  readonly term: number;
  readonly at: number;
  readonly reason: string;
}

export interface StoppingMessage extends ChildMessage {
  readonly type: 'stopping';
  readonly at: number;
}

/** How often the leader acts. */
const ACT_EVERY_MS = 20;

runChild(async () => {
  const config = childConfig<LeaderCandidateConfig>();
  const instance = String(config.lockOptions.instance);

  @Injectable()
  class SingleJob {
    @Leader(config.name, { ttl: config.ttl })
    async run(term: LeaderTerm): Promise<void> {
      send({ type: 'elected', instance, term: term.term, at: wallClock() } satisfies ElectedMessage);
      for (;;) {
        if (term.signal.aborted) {
          const reason = (term.signal.reason as Error).constructor.name;
          send({ type: 'aborted-read', term: term.term, at: wallClock(), reason } satisfies AbortedReadMessage);
          return;
        }
        send({ type: 'act', term: term.term, at: wallClock() } satisfies ActMessage);
        await new Promise((resolve) => setTimeout(resolve, ACT_EVERY_MS));
      }
    }
  }

  @Module({ imports: [LockModule.forRoot(config.lockOptions)], providers: [SingleJob] })
  class CandidateModule {}
  const app = await NestFactory.createApplicationContext(CandidateModule, { logger: quietLogger() });
  send({ type: 'ready' });
  await receive('stop');
  send({ type: 'stopping', at: wallClock() } satisfies StoppingMessage);
  await app.close();
  send({ type: 'stopped' });
  process.disconnect();
});
