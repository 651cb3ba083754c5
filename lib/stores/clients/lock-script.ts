import { createHash } from 'node:crypto';

/** A Lua script with the SHA1 that EVALSHA names it by. */
export interface LockScript {
  /** A name for logs and for clients that register scripts as commands (ioredis defineCommand). */
  readonly name: string;
  readonly lua: string;
  readonly sha: string;
}

/** Computes the SHA once, here, so no adapter has to ask the server for it (SCRIPT LOAD) before first use. */
export function lockScript(name: string, lua: string): LockScript {
  return { name, lua, sha: createHash('sha1').update(lua).digest('hex') };
}
