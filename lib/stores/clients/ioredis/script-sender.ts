// Sends this library's own script commands on an ioredis connection: in full on a socket's first use, by SHA after,
// once more on NOSCRIPT.
import type { Command } from 'ioredis';
import { CommandTimeoutError } from '../../../errors/command-timeout.error';
import { expireAfter } from '../../../util/with-timeout';
import type { RedisArgument } from '../lock-client';
import type { LockScript } from '../lock-script';
import type { IoredisConnection, IoredisPipeline } from './ioredis-connection';
import type { IoredisInternals } from './ioredis-internals';
import { batchScript } from './script-batch';
import { type ScriptCommandClass, type ScriptsSent, scriptCommandClass } from './script-command';
import type { WriteCoalescer } from './write-coalescer';

/** What a script call answered NOSCRIPT does: sent again once, in full ('resend'), or rejected ('fail'). */
export type OnNoScript = 'resend' | 'fail';

/**
 * The ScriptCommands of one connection whose internals take them (IoredisInternals.ownCommands). Which
 * scripts each socket was sent in full is kept per socket, so a new connection (a restarted server, a
 * promoted replica) is sent each script in full again rather than answered NOSCRIPT.
 */
export class ScriptSender {
  /** The scripts each socket was sent in full. Replaced after a NOSCRIPT (a SCRIPT FLUSH). */
  private scriptsSent = new WeakMap<object, Set<string>>();
  private readonly sentScripts: ScriptsSent = {
    on: (socket) => {
      let sent = this.scriptsSent.get(socket);
      if (!sent) {
        sent = new Set();
        this.scriptsSent.set(socket, sent);
      }
      return sent;
    },
  };

  /** ScriptCommand on the connection's own Command class (see scriptCommandClass). */
  private readonly ScriptCommand: ScriptCommandClass;

  constructor(
    private readonly connection: IoredisConnection,
    private readonly internals: IoredisInternals,
    private readonly writes: WriteCoalescer,
  ) {
    if (!internals.commandClass) throw new TypeError('ScriptSender needs a connection that takes its own commands');
    this.ScriptCommand = scriptCommandClass(internals.commandClass);
  }

  /** Every socket is presumed to have lost every script: each goes in full again. */
  forgetScripts(): void {
    this.scriptsSent = new WeakMap();
  }

  /**
   * Sends a ScriptCommand. Its deadline rejects the command itself, as ioredis' own commandTimeout does
   * (a late reply then settles nothing), so no promise wraps it: this is the hot path of every lock.
   * A NOSCRIPT means the server lost its scripts under a live connection (a SCRIPT FLUSH, as a rule: a new
   * connection is always sent the script first): every socket is then presumed to have lost every script,
   * and the command is sent again once (unless `onNoScript` is 'fail'), in full, within what is left of its timeout.
   */
  send(
    script: LockScript,
    keys: readonly string[],
    args: readonly RedisArgument[],
    timeoutMs: number | undefined,
    onNoScript: OnNoScript = 'resend',
  ): Promise<unknown> {
    this.writes.beforeWrite();
    const sentAt = performance.now();
    const command = new this.ScriptCommand(script, this.sentScripts, keys, args, timeoutMs ?? Infinity);
    const reply = this.connection.sendCommand(command) as Promise<unknown>;
    // Armed once the command is queued: a sendCommand that threw leaves no deadline to reject a promise
    // nobody listens to.
    const deadline = timeoutMs === undefined ? undefined : expireAfter(command);
    return reply.then(
      (value) => {
        deadline?.cancel(command);
        return value;
      },
      (error: Error) => {
        deadline?.cancel(command);
        if (onNoScript === 'fail' || !isNoScript(error)) throw error;
        this.forgetScripts();
        // The resend has what is left of the caller's time, not a whole timeout of its own.
        const left = timeoutMs === undefined ? undefined : timeoutMs - (performance.now() - sentAt);
        if (left !== undefined && left <= 0) throw new CommandTimeoutError(timeoutMs as number);
        return this.send(script, keys, args, left, 'fail');
      },
    );
  }

  /** Sends one call of the batch script (see script-batch.ts), without a deadline: each call has its own. */
  sendBatch(keys: readonly string[], args: readonly RedisArgument[]): Promise<unknown> {
    this.writes.beforeWrite();
    return this.connection.sendCommand(
      new this.ScriptCommand(batchScript(), this.sentScripts, keys, args, Infinity),
    ) as Promise<unknown>;
  }

  /** Queues `script` on a pipeline as a ScriptCommand (see IoredisInternals.queueOnPipeline); false when it cannot. */
  queueOnPipeline(
    pipeline: IoredisPipeline,
    script: LockScript,
    keys: readonly string[],
    args: readonly RedisArgument[],
  ): boolean {
    return this.internals.queueOnPipeline(
      pipeline,
      (): Command => new this.ScriptCommand(script, this.sentScripts, keys, args, Infinity),
    );
  }
}

export function isNoScript(error: Error | null | undefined): boolean {
  return error != null && String(error.message).startsWith('NOSCRIPT');
}
