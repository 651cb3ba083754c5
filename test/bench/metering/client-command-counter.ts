import { createHash } from 'node:crypto';
import { Command } from 'ioredis';
import { ScriptCommand } from '../../../lib/stores/clients/ioredis/script-command';
import { scriptCallShas } from '../../support/script-calls';
import { epochNow } from '../clock';
import { isHarnessCommand } from './harness-commands';

/** What the clients wrote to the counted servers while a count was open. */
export interface ClientCount {
  /** Commands written, by lower-case name (harness commands left out). */
  readonly byName: Readonly<Record<string, number>>;
  /**
   * Script calls by script SHA1 (an EVAL's is the SHA1 of its body, as Redis computes it); a call of this
   * library's batch script counts as the calls it carries, each by its own script's SHA1.
   */
  readonly scriptCalls: Readonly<Record<string, number>>;
  /** Sum of byName. */
  readonly total: number;
  /** Epoch ms at which each command was written, in order; empty unless asked for. */
  readonly sentAtMs: Float64Array;
}

interface OpenCount {
  readonly ports: ReadonlySet<number>;
  readonly byName: Map<string, number>;
  readonly scriptCalls: Map<string, number>;
  readonly timestamps: boolean;
  sentAt: Float64Array;
  sent: number;
}

interface Writable {
  name: string;
  args: unknown[];
}

interface SocketLike {
  remotePort?: number;
}

let open: OpenCount | undefined;
let installed = false;
/** Script bodies seen in EVAL, by identity: hashing a 1 kB body on every EVAL would cost the client. */
const shaOfBody = new Map<string, string>();

/**
 * Counts the commands every ioredis client of this process writes to chosen servers, without touching Redis:
 * a wrapper around `Command.prototype.toWritable`, which ioredis calls exactly once per command it writes
 * to a socket (plain commands, pipelines, and the EVAL/EVALSHA of `defineCommand` scripts, whose
 * subclass sets the final name and first argument before calling it). Commands queued while offline and
 * written later are counted when written, once.
 *
 * Why on the client and not with MONITOR: MONITOR makes Redis format every command for the monitor and
 * makes this process parse ~10 lines per acquisition, which on a 2-core machine slows the very races a
 * hot key measures and inflates Redis' CPU time. The counter costs a Map update per command. MONITOR still
 * checks it once per contestant (see script-census.ts), and every run checks it against INFO commandstats
 * for the commands a script cannot run (see cost-meter.ts).
 *
 * Every contestant, peers included, talks to Redis through the ioredis installed here (one copy in
 * node_modules), except the library over an application's own copy of ioredis (see lent-ioredis.ts): the
 * Command class of each such copy, `otherCopies`, is wrapped too. The library's script commands on any copy
 * write through ScriptCommand.prototype.toWritable, wrapped below.
 */
export function installClientCommandCounter(otherCopies: readonly { readonly prototype: object }[] = []): void {
  if (installed) return;
  installed = true;
  for (const commandClass of [Command, ...otherCopies]) {
    const prototype = commandClass.prototype as unknown as { toWritable(this: Writable, socket: unknown): unknown };
    const original = prototype.toWritable;
    prototype.toWritable = function countedToWritable(this: Writable, socket: unknown): unknown {
      const port = (socket as SocketLike | undefined)?.remotePort;
      if (open !== undefined && port !== undefined && open.ports.has(port)) record(open, this);
      return original.call(this, socket);
    };
  }
  // This library's scripts write their own bytes without the base method (script-command.ts), and
  // decide between EVAL and EVALSHA as they write: counted after, by the name then set. Their first argument
  // is the script's SHA1 either way; a batch's calls are named in its arguments (see scriptCallShas).
  const scripts = ScriptCommand.prototype as unknown as { toWritable(this: Writable, socket: unknown): unknown };
  const writeScript = scripts.toWritable;
  scripts.toWritable = function countedScriptToWritable(this: Writable, socket: unknown): unknown {
    const written = writeScript.call(this, socket);
    const port = (socket as SocketLike | undefined)?.remotePort;
    if (open !== undefined && port !== undefined && open.ports.has(port))
      record(open, this, scriptCallShas(this.args as string[]));
    return written;
  };
}

/** `shas`: the SHA1 of each script call the command carries, when it names them whatever it writes (ScriptCommand). */
function record(count: OpenCount, command: Writable, shas?: readonly string[]): void {
  const name = command.name.toLowerCase();
  if (isHarnessCommand(name)) return;
  count.byName.set(name, (count.byName.get(name) ?? 0) + 1);
  if (name === 'evalsha' || name === 'evalsha_ro' || name === 'eval' || name === 'eval_ro') {
    const first = String(command.args[0]);
    for (const sha of shas ?? [name.startsWith('evalsha') ? first.toLowerCase() : bodySha(first)]) {
      count.scriptCalls.set(sha, (count.scriptCalls.get(sha) ?? 0) + 1);
    }
  }
  if (count.timestamps) {
    if (count.sent === count.sentAt.length) {
      const grown = new Float64Array(count.sentAt.length * 2);
      grown.set(count.sentAt);
      count.sentAt = grown;
    }
    count.sentAt[count.sent] = epochNow();
  }
  count.sent++;
}

function bodySha(lua: string): string {
  let sha = shaOfBody.get(lua);
  if (sha === undefined) {
    sha = createHash('sha1').update(lua).digest('hex');
    shaOfBody.set(lua, sha);
  }
  return sha;
}

/** Starts counting what is written to the servers on `ports`; one count at a time (the workloads run one by one). */
export function startClientCount(ports: readonly number[], options: { timestamps?: boolean } = {}): void {
  if (!installed) throw new Error('installClientCommandCounter() first');
  if (open !== undefined) throw new Error('a client command count is already open');
  open = {
    ports: new Set(ports),
    byName: new Map(),
    scriptCalls: new Map(),
    timestamps: options.timestamps === true,
    sentAt: new Float64Array(1024),
    sent: 0,
  };
}

/** Ends the open count and returns it. */
export function stopClientCount(): ClientCount {
  const count = open;
  if (count === undefined) throw new Error('no client command count is open');
  open = undefined;
  return {
    byName: Object.fromEntries(count.byName),
    scriptCalls: Object.fromEntries(count.scriptCalls),
    total: count.sent,
    sentAtMs: count.timestamps ? count.sentAt.slice(0, count.sent) : new Float64Array(0),
  };
}
