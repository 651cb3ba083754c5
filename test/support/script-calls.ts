import { Command } from 'ioredis';
import { ScriptCommand } from '../../lib/stores/clients/ioredis/script-command';
import { registeredLockScripts } from '../../lib/stores/clients/lock-script';
import { batchScript } from '../../lib/stores/clients/ioredis/script-batch';

/**
 * The SHA1 of every script call an EVAL/EVALSHA of this library carries, from its arguments as written
 * (`sha numkeys key… arg…`): one call of the batch script is the calls it runs, each by its own script's SHA1
 * (see script-batch.ts: ARGV holds the number of calls, then per call its script's batchIndex, key count,
 * argument count and arguments); any other script call is itself.
 */
export function scriptCallShas(strings: readonly string[]): string[] {
  const sha = String(strings[0]).toLowerCase();
  if (sha !== batchScript().sha) return [sha];
  const scripts = registeredLockScripts();
  let at = 2 + Number(strings[1]);
  const calls = Number(strings[at++]);
  const shas: string[] = [];
  for (let call = 0; call < calls; call++) {
    const index = Number(strings[at]);
    const argCount = Number(strings[at + 2]);
    shas.push(scripts[index - 1].sha);
    at += 3 + argCount;
  }
  return shas;
}

/** What the clients of this process wrote to the counted servers since counting began. */
export interface ScriptCallCount {
  /** Script calls: a call of the batch script counts as the calls it carries. */
  readonly calls: number;
  /** EVAL/EVALSHA commands, a batch once: what Redis' INFO commandstats counts. */
  readonly commands: number;
  /**
   * calls - commands: the calls batches carried beyond their one command each. Added to INFO commandstats'
   * EVAL/EVALSHA count, it counts every script call a server ran, whatever client sent it (a client this
   * cannot see, node-redis, sends no batches).
   */
  readonly beyondCommands: number;
  /** Stops counting and puts ioredis back as it was. */
  stop(): void;
}

interface Written {
  name: string;
  readonly args: readonly unknown[];
}
type ToWritable = (this: Written, socket: unknown) => unknown;

interface Tally {
  readonly ports: ReadonlySet<number>;
  calls: number;
  commands: number;
}

/** The counts open now: the wrappers are installed while there is one, and taken off with the last. */
const open = new Set<Tally>();
let restore: (() => void) | undefined;

function tallyWritten(socket: unknown, calls: () => number): void {
  const port = (socket as { remotePort?: number } | undefined)?.remotePort;
  if (port === undefined) return;
  for (const tally of open) {
    if (!tally.ports.has(port)) continue;
    tally.calls += calls();
    tally.commands++;
  }
}

/** Wraps `toWritable` (called once per command written to a socket) of ioredis' Command and of ScriptCommand. */
function install(): () => void {
  const base = Command.prototype as unknown as { toWritable: ToWritable };
  const ours = ScriptCommand.prototype as unknown as { toWritable: ToWritable };
  const writeCommand = base.toWritable;
  const writeScript = ours.toWritable;
  base.toWritable = function countedCommand(this: Written, socket) {
    const name = this.name.toLowerCase();
    if (name === 'eval' || name === 'evalsha') tallyWritten(socket, () => 1);
    return writeCommand.call(this, socket);
  };
  // ScriptCommand writes its own bytes (it does not call the base method) and names its call as it writes.
  ours.toWritable = function countedScript(this: Written, socket) {
    const written = writeScript.call(this, socket);
    tallyWritten(socket, () => scriptCallShas(this.args as string[]).length);
    return written;
  };
  return () => {
    base.toWritable = writeCommand;
    ours.toWritable = writeScript;
  };
}

/**
 * Counts the script calls every ioredis connection of this process writes to the servers on `ports`.
 * INFO commandstats cannot tell how many calls a batch carried, and a test that counts attempts per
 * acquisition must see every attempt, batched or not. What is written is counted: a batch refused as a whole
 * (NOSCRIPT, CROSSSLOT) counts its calls, and again their resends. Always stop() it (in a finally, or
 * onTestFinished): the wrappers, shared by the counts open at once, come off with the last one.
 */
export function countScriptCalls(ports: readonly number[]): ScriptCallCount {
  const tally: Tally = { ports: new Set(ports), calls: 0, commands: 0 };
  restore ??= install();
  open.add(tally);
  return {
    get calls() {
      return tally.calls;
    },
    get commands() {
      return tally.commands;
    },
    get beyondCommands() {
      return tally.calls - tally.commands;
    },
    stop() {
      if (!open.delete(tally) || open.size > 0) return;
      restore?.();
      restore = undefined;
    },
  };
}
