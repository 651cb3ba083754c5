// Sends the script calls of one tick after its first as one call of the batch script, where the server takes batches.
import type { Logger } from '@nestjs/common';
import { CommandTimeoutError } from '../../../errors/command-timeout.error';
import { safeMessage } from '../../../errors/safe-cause';
import { expireAfter } from '../../../util/with-timeout';
import type { RedisArgument } from '../lock-client';
import type { LockScript } from '../lock-script';
import { batchRefusal, fitsBatches } from './batch-fit';
import type { IoredisConnection } from './ioredis-connection';
import type { IoredisInternals } from './ioredis-internals';
import { BatchedCall, batchArguments } from './script-batch';
import type { OnNoScript, ScriptSender } from './script-sender';
import { FLUSH_EVERY, type WriteCoalescer } from './write-coalescer';

/**
 * The script calls of a connection that takes this library's own commands. A tick's first call goes out at
 * once (one caller pays nothing for batching); the tick's later calls are queued, and go out together as one
 * call of the batch script (see script-batch.ts) at the tick's end: one command, one reply and one dispatch in
 * Redis for many calls, in the order they were made (every other command flushes the queue first, so nothing
 * overtakes a queued call).
 */
export class TickBatch {
  /**
   * Whether the server takes batches of script calls (see fitsBatches), from the INFO of ioredis' ready check
   * on each (re)connection (see readServerInfo): until then, and without a ready check, every call goes alone.
   */
  private batches = false;
  /** Set once a batch was refused as a server that shards would (CROSSSLOT, MOVED, ASK): no batches again. */
  private batchesRefused = false;
  /** Whether a script call went out in this tick: the tick's later calls then wait in `batched`. */
  private tickOpen = false;
  /** Script calls of this tick after its first, sent as one batch at the tick's end (or every FLUSH_EVERY). */
  private batched: BatchedCall[] = [];

  constructor(
    private readonly sender: ScriptSender,
    private readonly writes: WriteCoalescer,
    private readonly logger: Logger,
    private readonly label: string,
  ) {}

  /**
   * Reads whether the server takes batches from the INFO that ioredis' ready check sends on every connection
   * and reconnection, before any command of ours is written: no command of its own (a probe would be one more
   * command a proxy may choke on: twemproxy closes a connection on a command it does not know, and ioredis
   * would resend it after every reconnect), and a failover to another kind of server is noticed. No ready check
   * (enableReadyCheck: false, an INFO the ACL refuses, an ioredis whose check differs): no batches.
   */
  readServerInfo(connection: IoredisConnection, internals: IoredisInternals): void {
    const reading = internals.readServerInfo((error, info) => {
      this.batches =
        !this.batchesRefused && error == null && typeof info === 'object' && info !== null && fitsBatches(info);
    });
    if (!reading) return;
    // Until the next ready check, no batches: calls made while the connection is down wait in ioredis' offline
    // queue, and go to whatever server it reconnects to (a batch already written and resent after a reconnect
    // is the one exception, see docs/stores-and-deployment.md, "Batched script calls").
    connection.on('close', () => {
      this.batches = false;
    });
  }

  run(
    script: LockScript,
    keys: readonly string[],
    args: readonly RedisArgument[],
    timeoutMs: number | undefined,
  ): Promise<unknown> {
    if (!this.tickOpen) {
      this.tickOpen = true;
      process.nextTick(this.endTick);
      return this.sender.send(script, keys, args, timeoutMs);
    }
    if (this.batches !== true || script.batchIndex < 1) {
      this.flush();
      return this.sender.send(script, keys, args, timeoutMs);
    }
    return this.queue(script, keys, args, timeoutMs);
  }

  /** Queues a call for this tick's batch, its deadline armed now, as a command's is when it is sent. */
  private queue(
    script: LockScript,
    keys: readonly string[],
    args: readonly RedisArgument[],
    timeoutMs: number | undefined,
  ): Promise<unknown> {
    const call = new BatchedCall(script, keys, args, timeoutMs ?? Infinity);
    if (timeoutMs !== undefined) call.deadline = expireAfter(call);
    this.batched.push(call);
    if (this.batched.length >= FLUSH_EVERY) {
      // Written now, not at the tick's end: Redis starts on it while the rest of the tick is built.
      this.flush();
      this.writes.flush();
    }
    return call.promise;
  }

  /** The tick's end: its queued calls go out. Bound once: no closure per tick. */
  private readonly endTick = (): void => {
    this.tickOpen = false;
    this.flush();
  };

  /** Sends the queued calls: one alone as its own command, more as one call of the batch script. */
  flush(): void {
    const calls = this.batched;
    if (calls.length === 0) return;
    this.batched = [];
    if (calls.length === 1) {
      this.sendAlone(calls[0], 'resend');
      return;
    }
    const { keys, args } = batchArguments(calls);
    let replies: Promise<unknown>;
    try {
      replies = this.sender.sendBatch(keys, args);
    } catch (error) {
      for (const call of calls) call.fail(error as Error);
      return;
    }
    replies.then(
      (reply) => this.answered(calls, reply),
      (error: Error) => this.refused(calls, error),
    );
  }

  /** Each call settled by its own reply in the batch's. */
  private answered(calls: readonly BatchedCall[], reply: unknown): void {
    if (!Array.isArray(reply) || reply.length !== calls.length) {
      const error = new Error(
        `batch of ${calls.length} script calls answered ${Array.isArray(reply) ? reply.length : typeof reply} replies`,
      );
      for (const call of calls) call.fail(error);
      return;
    }
    for (let i = 0; i < calls.length; i++) {
      const each: unknown = reply[i];
      // An error nested in the reply is the call's own; ioredis' reconnectOnError never sees it (see the
      // docs/stores-and-deployment.md, "Batched script calls": a READONLY fails the call, as it would a lone command
      // sent a moment before the reconnect).
      if (each instanceof Error) calls[i].fail(each);
      else calls[i].settle(each);
    }
  }

  /** A batch refused as a whole (none of its calls ran): see batchRefusal. */
  private refused(calls: readonly BatchedCall[], error: Error): void {
    const refusal = batchRefusal(error);
    if (refusal === 'fail-each') {
      for (const call of calls) call.fail(error);
      return;
    }
    if (refusal === 'send-each') {
      // The server lost its scripts (SCRIPT FLUSH): each call goes again on its own, in full.
      this.sender.forgetScripts();
    } else if (!this.batchesRefused) {
      this.batchesRefused = true;
      this.batches = false;
      this.logger.warn(
        `Redis ${this.label}: a batch of script calls was refused ` +
          `(${safeMessage(error)}); sending each call on its own from now on`,
      );
    }
    // In the order they were made, each with what is left of its time.
    for (const call of calls) {
      if (performance.now() - call.queuedAt >= call.timeoutMs) call.fail(new CommandTimeoutError(call.timeoutMs));
      else this.sendAlone(call, refusal === 'send-each' ? 'fail' : 'resend');
    }
  }

  /**
   * Sends a queued call as a command of its own, settled by its reply; its deadline stays the one armed when it
   * was queued.
   */
  private sendAlone(call: BatchedCall, onNoScript: OnNoScript): void {
    let reply: Promise<unknown>;
    try {
      reply = this.sender.send(call.script, call.keys, call.args, undefined, onNoScript);
    } catch (error) {
      call.fail(error as Error);
      return;
    }
    reply.then(
      (each) => call.settle(each),
      (each: Error) => call.fail(each),
    );
  }
}
