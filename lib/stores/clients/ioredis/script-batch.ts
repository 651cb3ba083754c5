// The batch script that runs many script calls in one EVALSHA, and a call waiting for its batch.
import { type LockScript, registeredLockScripts, sha1 } from '../lock-script';
import type { RedisArgument } from '../lock-client';
import type { DeadlineBucket, Expirable } from '../../../util/with-timeout';
import { SERVER_CLOCK } from '../server-clock.lua';

/**
 * One script that runs many script calls in order, in one EVALSHA: every script lockScript() made is a
 * function of it, called with its own KEYS and ARGV under pcall, so one call's error is that call's reply
 * and the calls after it still run, as they would have as commands of their own.
 *
 * KEYS: every call's keys, one call after the other. ARGV: the number of calls, then per call its script's
 * batchIndex, its number of keys, its number of arguments, and its arguments.
 * Returns one reply per call, in order: what the call's script returned (nil as false, which Redis answers
 * as nil: a nil would end the array there), or the error it raised.
 */
function batchLua(scripts: readonly LockScript[]): string {
  // A script's own clock (SERVER_CLOCK) gives way to the batch's: TIME is read once per batch.
  const functions = scripts
    .map((script) => `[${script.batchIndex}] = function(KEYS, ARGV)\n${script.lua.replace(SERVER_CLOCK, '')}\nend`)
    .join(',\n');
  return `${SERVER_CLOCK}local scripts = {
${functions}
}
local replies = {}
local key, arg = 1, 2
for call = 1, tonumber(ARGV[1]) do
  local script = scripts[tonumber(ARGV[arg])]
  local keyCount, argCount = tonumber(ARGV[arg + 1]), tonumber(ARGV[arg + 2])
  arg = arg + 3
  local keys, args = {}, {}
  for i = 1, keyCount do keys[i] = KEYS[key]; key = key + 1 end
  for i = 1, argCount do args[i] = ARGV[arg]; arg = arg + 1 end
  local ok, reply = pcall(script, keys, args)
  if not ok then
    -- Raised as a string: a command's error starts with its code (READONLY …, WRONGTYPE …); a Lua runtime
    -- error does not, and Redis gives a script's own the ERR code.
    if type(reply) ~= 'table' then
      reply = tostring(reply)
      if not string.match(reply, '^%u+ ') then reply = 'ERR ' .. reply end
      reply = { err = reply }
    end
  elseif reply == nil then
    reply = false
  end
  replies[call] = reply
end
return replies
`;
}

/** The batch script of the scripts registered so far, and how many that is. */
interface BatchScript {
  readonly script: LockScript;
  readonly covers: number;
}

let current: BatchScript | undefined;

/**
 * The batch script: of every script registered, made again when one was registered since (the stores register
 * theirs once, as their modules load, so a process runs one batch script; a script made later, a test's, makes a
 * new one that Redis caches beside the old).
 */
export function batchScript(): LockScript {
  const scripts = registeredLockScripts();
  if (current?.covers !== scripts.length) {
    const lua = batchLua(scripts);
    current = { script: { name: 'nestLockBatch', lua, sha: sha1(lua), batchIndex: 0 }, covers: scripts.length };
  }
  return current.script;
}

/** A script call waiting for its batch: settled by the batch's reply, or rejected at its own deadline. */
export class BatchedCall implements Expirable {
  readonly promise: Promise<unknown>;
  resolve!: (reply: unknown) => void;
  reject!: (error: Error) => void;
  deadlineSlot: number | undefined = undefined;
  /** The bucket of its deadline, when it has one: left once it is answered. */
  deadline: DeadlineBucket | undefined = undefined;
  /** When it was queued (performance.now()): a call sent again after a NOSCRIPT has what is left of its time. */
  readonly queuedAt = performance.now();

  constructor(
    readonly script: LockScript,
    readonly keys: readonly string[],
    readonly args: readonly RedisArgument[],
    readonly timeoutMs: number,
  ) {
    this.promise = new Promise((resolve, reject) => {
      this.resolve = resolve;
      this.reject = reject;
    });
  }

  settle(reply: unknown): void {
    this.deadline?.cancel(this);
    this.resolve(reply);
  }

  fail(error: Error): void {
    this.deadline?.cancel(this);
    this.reject(error);
  }
}

/** The keys and arguments of the batch script for `calls` (see batchLua). */
export function batchArguments(calls: readonly BatchedCall[]): { keys: string[]; args: RedisArgument[] } {
  const keys: string[] = [];
  const args: RedisArgument[] = [calls.length];
  for (const call of calls) {
    args.push(call.script.batchIndex, call.keys.length, call.args.length);
    for (const key of call.keys) keys.push(key);
    for (const arg of call.args) args.push(arg);
  }
  return { keys, args };
}
