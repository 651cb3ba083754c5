import { Command } from 'ioredis';
import type { RedisArgument } from './lock-client';
import type { LockScript } from './lock-script';

/** Which scripts were sent in full (EVAL) on which socket: the server has them cached for that connection's life. */
export interface ScriptsSent {
  /** The SHAs sent on `socket` so far (created empty on first use). */
  on(socket: object): Set<string>;
}

/** Replies decoded as strings, as ioredis' own command methods return them (Buffers otherwise). */
const REPLY_AS_TEXT = { replyEncoding: 'utf8' } as const;

/**
 * One lock script as a single ioredis command, built directly rather than through a defineCommand method.
 * The defined command wraps every call in a Script (argument copies, an options object, a rejection
 * wrapper and a closure per call, a catch and a callback adapter per promise); on the hot path of a
 * lock that is a measurable share of the client's CPU per acquisition.
 *
 * Whether to send EVALSHA or the whole script (EVAL) is decided when the command is written, per socket, as
 * ioredis' own Script does: the first use on a connection, and every command resent on a new connection
 * after a reconnect, carries the script, so Redis never answers NOSCRIPT to a command that later ones
 * were queued behind (a NOSCRIPT and its resend would let those run first: a release overtaken by the
 * waiter's attempt it was meant to precede).
 */
export class ScriptCommand extends Command {
  constructor(
    private readonly script: LockScript,
    private readonly sent: ScriptsSent,
    keys: readonly string[],
    args: readonly RedisArgument[],
    /** The adapter's deadline for an answer (Expirable): past it, reject() settles the command's promise. */
    readonly timeoutMs: number,
  ) {
    // The arguments are set after the base constructor, already as strings: given to it, they would go
    // through Array.prototype.flat (and a check per argument), measured at ~450 of the ~700 ns it takes
    // to build one command; ours are flat strings and numbers by construction.
    super('evalsha', [], REPLY_AS_TEXT);
    this.args = commandArguments(script.sha, keys, args);
  }

  override toWritable(socket: object): string | Buffer {
    const sent = this.sent.on(socket);
    if (!sent.has(this.script.sha)) {
      sent.add(this.script.sha);
      this.name = 'eval';
      this.args[0] = this.script.lua;
    } else if (this.name === 'eval') {
      this.name = 'evalsha';
      this.args[0] = this.script.sha;
    }
    return super.toWritable(socket);
  }
}

/** `sha numkeys key… arg…` as the strings written to Redis (what the base constructor would have made of them). */
function commandArguments(sha: string, keys: readonly string[], args: readonly RedisArgument[]): string[] {
  const all = [sha, String(keys.length)];
  for (const key of keys) all.push(key);
  for (const arg of args) all.push(typeof arg === 'string' ? arg : String(arg));
  return all;
}
