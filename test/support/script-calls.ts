import { Command } from 'ioredis';
import { ScriptCommand } from '../../lib/stores/clients/ioredis-script-command';
import { registeredLockScripts } from '../../lib/stores/clients/lock-script';
import { batchScript } from '../../lib/stores/clients/script-batch';

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

/**
 * Counts the script calls every ioredis connection of this process writes to the servers on `ports`, by
 * wrapping `toWritable` (called once per command written to a socket) of ioredis' Command and of this
 * library's ScriptCommand (which writes its own bytes). INFO commandstats cannot tell how many calls a batch
 * carried, and a test that counts attempts per acquisition must see every attempt, batched or not. Always
 * stop() it (in a finally): the wrappers would otherwise outlive the test file.
 */
export function countScriptCalls(ports: readonly number[]): ScriptCallCount {
  const counted = new Set(ports);
  const tally = { calls: 0, commands: 0 };
  const onCountedSocket = (socket: unknown): boolean => counted.has((socket as { remotePort?: number } | undefined)?.remotePort ?? -1);
  const base = Command.prototype as unknown as { toWritable: ToWritable };
  const ours = ScriptCommand.prototype as unknown as { toWritable: ToWritable };
  const writeCommand = base.toWritable;
  const writeScript = ours.toWritable;
  const countedCommand: ToWritable = function (this: Written, socket) {
    const name = this.name.toLowerCase();
    if ((name === 'eval' || name === 'evalsha') && onCountedSocket(socket)) {
      tally.calls++;
      tally.commands++;
    }
    return writeCommand.call(this, socket);
  };
  const countedScript: ToWritable = function (this: Written, socket) {
    const written = writeScript.call(this, socket);
    if (onCountedSocket(socket)) {
      tally.calls += scriptCallShas(this.args as string[]).length;
      tally.commands++;
    }
    return written;
  };
  base.toWritable = countedCommand;
  ours.toWritable = countedScript;
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
      if (base.toWritable === countedCommand) base.toWritable = writeCommand;
      if (ours.toWritable === countedScript) ours.toWritable = writeScript;
    },
  };
}
