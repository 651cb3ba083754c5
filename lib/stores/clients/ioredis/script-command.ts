// One lock script as an ioredis command built directly, written as EVAL or EVALSHA per socket; used only where
// IoredisInternals finds ioredis' Command protocol.
import { Command } from 'ioredis';
import type { RedisArgument } from '../lock-client';
import type { LockScript } from '../lock-script';

/** Which scripts were sent in full (EVAL) on which socket: the server has them cached for that connection's life. */
export interface ScriptsSent {
  /** The SHAs sent on `socket` so far (created empty on first use). */
  on(socket: object): Set<string>;
}

/** Replies decoded as strings, as ioredis' own command methods return them (Buffers otherwise). */
const REPLY_AS_TEXT = { replyEncoding: 'utf8' } as const;

/** One script call as it goes on the wire: its arguments as strings, and its EVALSHA encoding once made. */
interface ScriptCallWire {
  readonly script: LockScript;
  /** How many of the strings after numkeys are keys: the same strings split otherwise are another call. */
  readonly keyCount: number;
  /** `sha numkeys key… arg…`: what is matched and encoded; never handed out, so never changed. */
  readonly strings: readonly string[];
  /** The RESP text of EVALSHA with `strings`, made on first write. */
  evalsha: string | undefined;
  /**
   * The same as bytes, made on the second write: every further node's socket takes the same bytes without
   * converting the text again, while a call written once (one Redis) goes out as text, which costs less than
   * building bytes (see docs/performance.md).
   */
  evalshaBytes: Buffer | undefined;
}

/**
 * The call encoded last. A Redlock round sends one script with the same keys and arguments to every node,
 * one node after the other in one synchronous loop (and so does its release): every command after the first
 * finds its arguments and its RESP bytes here instead of building them again (see docs/performance.md). Matched by
 * value against the strings it holds, never by array identity (a caller may change an array in place and send it
 * again), so a call never goes out with another's bytes; a miss (one Redis) costs a comparison or two.
 */
let lastWire: ScriptCallWire | undefined;

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
  private readonly wire: ScriptCallWire;
  /** Its place in its deadline bucket (Expirable). */
  deadlineSlot: number | undefined;

  constructor(
    script: LockScript,
    private readonly sent: ScriptsSent,
    keys: readonly string[],
    args: readonly RedisArgument[],
    /** The adapter's deadline for an answer (Expirable): past it, reject() settles the command's promise. */
    readonly timeoutMs: number,
  ) {
    // The arguments are set after the base constructor, already as strings: given to it, they would go
    // through Array.prototype.flat (and a check per argument), most of what building one command costs;
    // ours are flat strings and numbers by construction.
    super('evalsha', [], REPLY_AS_TEXT);
    this.wire = wireFor(script, keys, args);
    // Assigned here, with the other fields, so every command has the same shape before its bucket sets it.
    this.deadlineSlot = undefined;
  }

  override toWritable(socket: object): string | Buffer {
    const wire = this.wire;
    const sent = this.sent.on(socket);
    if (!sent.has(wire.script.sha)) {
      sent.add(wire.script.sha);
      this.name = 'eval';
      return encode('eval', wire.script.lua, wire.strings);
    }
    this.name = 'evalsha';
    if (wire.evalsha === undefined) {
      wire.evalsha = encode('evalsha', wire.script.sha, wire.strings);
      return wire.evalsha;
    }
    wire.evalshaBytes ??= Buffer.from(wire.evalsha);
    return wire.evalshaBytes;
  }
}

/**
 * A command's `args`, as ioredis reads them: a copy of the call's strings per read. ioredis reads them only to
 * report a command (an error's `command.args`, debug logs, traces; never to write it), and what a reader does
 * with them must not reach what the memo matches and writes; a copy per call would cost every command, read or
 * not. What the base constructor assigns is dropped. After an EVAL write, `name` says eval
 * while args[0] is the SHA (shorter in logs and traces).
 */
const ARGS_ACCESSOR: PropertyDescriptor = {
  get(this: { wire?: ScriptCallWire }): string[] {
    return this.wire ? this.wire.strings.slice() : [];
  },
  set(): void {
    // The base constructor's empty argument list: the call's strings are the arguments.
  },
};
Object.defineProperty(ScriptCommand.prototype, 'args', ARGS_ACCESSOR);

/** How a script command is made, on whichever copy of ioredis (or iovalkey) its connection comes from. */
export type ScriptCommandClass = new (
  script: LockScript,
  sent: ScriptsSent,
  keys: readonly string[],
  args: readonly RedisArgument[],
  timeoutMs: number,
) => ScriptCommand;

/** An ioredis Command class: the one this library loads, or another copy's (`Redis.Command` of the lent client). */
export type CommandClass = typeof Command;

const scriptCommandClasses = new WeakMap<CommandClass, ScriptCommandClass>();

/**
 * ScriptCommand on `base`, the Command class of the connection's own copy of ioredis (or of iovalkey): a lent
 * client of another ioredis than this library's (an application's ioredis 5 next to the library's 6) queues
 * and answers commands of its own class, which carry the fields that copy sets and reads. Made once per class.
 * Every class writes through ScriptCommand.prototype.toWritable, looked up at each write, so there is one
 * writing path whatever the copy (and one place for a test to watch it).
 */
export function scriptCommandClass(base: CommandClass): ScriptCommandClass {
  if (base === Command) return ScriptCommand;
  let made = scriptCommandClasses.get(base);
  if (made === undefined) {
    made = scriptCommandOn(base);
    scriptCommandClasses.set(base, made);
  }
  return made;
}

function scriptCommandOn(base: CommandClass): ScriptCommandClass {
  class ForeignScriptCommand extends base {
    private readonly wire: ScriptCallWire;
    deadlineSlot: number | undefined;

    constructor(
      script: LockScript,
      private readonly sent: ScriptsSent,
      keys: readonly string[],
      args: readonly RedisArgument[],
      readonly timeoutMs: number,
    ) {
      super('evalsha', [], REPLY_AS_TEXT);
      this.wire = wireFor(script, keys, args);
      this.deadlineSlot = undefined;
    }

    override toWritable(socket: object): string | Buffer {
      return ScriptCommand.prototype.toWritable.call(this as unknown as ScriptCommand, socket);
    }
  }
  Object.defineProperty(ForeignScriptCommand.prototype, 'args', ARGS_ACCESSOR);
  return ForeignScriptCommand as unknown as ScriptCommandClass;
}

/** The wire form of a call: the last one's when it is the same call (see lastWire), else a new one. */
function wireFor(script: LockScript, keys: readonly string[], args: readonly RedisArgument[]): ScriptCallWire {
  const last = lastWire;
  if (last?.script === script && last.keyCount === keys.length && sameCall(last.strings, keys, args)) return last;
  const wire: ScriptCallWire = {
    script,
    keyCount: keys.length,
    strings: commandArguments(script.sha, keys, args),
    evalsha: undefined,
    evalshaBytes: undefined,
  };
  lastWire = wire;
  return wire;
}

/** Whether `strings` (a call's arguments as written) are `keys` and `args`. */
function sameCall(strings: readonly string[], keys: readonly string[], args: readonly RedisArgument[]): boolean {
  if (strings.length !== 2 + keys.length + args.length) return false;
  let at = 2;
  for (const key of keys) if (strings[at++] !== key) return false;
  for (const arg of args) if (strings[at++] !== (typeof arg === 'string' ? arg : String(arg))) return false;
  return true;
}

/** `sha numkeys key… arg…` as the strings written to Redis (what the base constructor would have made of them). */
function commandArguments(sha: string, keys: readonly string[], args: readonly RedisArgument[]): string[] {
  const all = [sha, String(keys.length)];
  for (const key of keys) all.push(key);
  for (const arg of args) all.push(typeof arg === 'string' ? arg : String(arg));
  return all;
}

/**
 * RESP: `name`, then `first` and strings[1..] as bulk strings (`first` replaces the SHA: the script itself for EVAL).
 */
function encode(name: string, first: string, strings: readonly string[]): string {
  let text = `*${strings.length + 1}\r\n$${name.length}\r\n${name}\r\n$${Buffer.byteLength(first)}\r\n${first}\r\n`;
  for (let i = 1; i < strings.length; i++) text += `$${Buffer.byteLength(strings[i])}\r\n${strings[i]}\r\n`;
  return text;
}
