// A Lua script with the SHA1 EVALSHA names it by, and the registry a batch of calls numbers scripts from.
import { createHash } from 'node:crypto';

/** A Lua script with the SHA1 that EVALSHA names it by. */
export interface LockScript {
  /** A name for logs and for clients that register scripts as commands (ioredis defineCommand). */
  readonly name: string;
  readonly lua: string;
  readonly sha: string;
  /** Its place among the scripts made by lockScript(): how a batch of calls names it (see script-batch.ts). */
  readonly batchIndex: number;
}

/** Every script made by lockScript(), in the order they were made: what a batch script can run. */
const registered: LockScript[] = [];

/** Computes the SHA once, here, so no adapter has to ask the server for it (SCRIPT LOAD) before first use. */
export function lockScript(name: string, lua: string): LockScript {
  const script = { name, lua, sha: sha1(lua), batchIndex: registered.length + 1 };
  registered.push(script);
  return script;
}

/** The scripts lockScript() has made so far (the stores make theirs when their modules load). */
export function registeredLockScripts(): readonly LockScript[] {
  return registered;
}

export function sha1(text: string): string {
  return createHash('sha1').update(text).digest('hex');
}
