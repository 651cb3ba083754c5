// Writes to a Redis resource only with a fencing token greater than the last one it accepted.
import type { Cluster, Redis } from 'ioredis';
import { createHash } from 'node:crypto';
import { HeldLock } from '../engine/lease/held-lock';
import { LockOptionsError } from '../errors';
import type { Lock } from '../lock.interface';
import { lastFenceKeyOf } from './fence-keys';
import { FENCED_SET_SCRIPT } from './fenced-set.script';
import { FencedWriteRejectedError } from './fenced-write-rejected.error';
import { safeCause } from '../errors/safe-cause';

export interface FencedSetOptions {
  /** When `fence` is a Lock over several keys: the key whose token guards this resource. Default: its first key. */
  lockKey?: string;
  /**
   * Where the resource's last accepted fence is kept. Default: the resource key plus `:last-fence`, under the
   * resource's hash tag (see lastFenceKeyOf). On Redis Cluster it must hash to the resource's slot.
   */
  fenceKey?: string;
  /** Expiry of the written value, in ms (SET PX). Default: none. The last-fence key itself never expires. */
  ttl?: number;
}

/** The command defineCommand adds to the client; namespaced so it cannot clash with a user's own. */
interface FencedSetClient {
  nestLockFencedSetByGrant(
    key: string,
    fenceKey: string,
    value: string | Buffer | number,
    fence: number,
    ttl: string,
    grant: string,
  ): Promise<[number, string]>;
}

/**
 * Writes to a Redis-stored resource only with a fencing token newer than the last one that wrote it
 * (Kleppmann's fencing tokens). A holder whose lock expired while it was paused (GC, a stopped VM, a slow
 * network) still carries its old token, so its late write is refused instead of overwriting the newer
 * holder's. An equal token is accepted only from the grant that wrote with it (one holder writing several
 * times): given a Lock, the writer records a digest of its token beside the fence and knows its grant; given a
 * bare number, it cannot tell grants apart, and refuses an equal token.
 *
 * One resource must be guarded by one lock key: tokens of different keys are unrelated sequences.
 * Errors: a refused write is a FencedWriteRejectedError (`set`) or `false` (`trySet`); bad arguments, or a
 * last-fence key holding something else, a LockOptionsError; connection errors are a copy of the client's
 * own without what it sent (see safe-cause.ts).
 */
export class FencedWriter {
  private readonly client: Redis | Cluster;

  constructor(client: Redis | Cluster) {
    this.client = client;
    // Defined once per client (EVALSHA, with ioredis' EVAL fallback after a SCRIPT FLUSH or a restart).
    if (!(client as Partial<FencedSetClient>).nestLockFencedSetByGrant) {
      client.defineCommand('nestLockFencedSetByGrant', { numberOfKeys: 2, lua: FENCED_SET_SCRIPT });
    }
  }

  /** Writes `value` at `key`, or rejects with FencedWriteRejectedError when a newer fence wrote it already. */
  async set(
    key: string,
    value: string | Buffer | number,
    fence: number | Lock,
    options: FencedSetOptions = {},
  ): Promise<void> {
    const outcome = await this.write(key, value, fence, options);
    if (!outcome.written) throw new FencedWriteRejectedError(key, outcome.fence, outcome.lastFence);
  }

  /** Like `set`, but resolves false instead of rejecting when the write is refused. */
  async trySet(
    key: string,
    value: string | Buffer | number,
    fence: number | Lock,
    options: FencedSetOptions = {},
  ): Promise<boolean> {
    return (await this.write(key, value, fence, options)).written;
  }

  private async write(
    key: string,
    value: string | Buffer | number,
    fenceOrLock: number | Lock,
    options: FencedSetOptions,
  ): Promise<{ written: boolean; fence: number; lastFence: number }> {
    if (typeof key !== 'string' || key.length === 0) throw new LockOptionsError('key', key, 'a non-empty Redis key');
    if (typeof value !== 'string' && typeof value !== 'number' && !Buffer.isBuffer(value)) {
      throw new LockOptionsError('value', value, 'a string, a number or a Buffer');
    }
    const { fence, grant } = stampOf(fenceOrLock, options.lockKey);
    const fenceKey = options.fenceKey ?? lastFenceKeyOf(key);
    if (typeof fenceKey !== 'string' || fenceKey.length === 0 || fenceKey === key) {
      throw new LockOptionsError('fenceKey', fenceKey, 'a non-empty Redis key other than the resource');
    }
    const ttl = options.ttl;
    if (ttl !== undefined && !(Number.isSafeInteger(ttl) && ttl > 0)) {
      throw new LockOptionsError('ttl', ttl, 'a whole number of milliseconds above 0');
    }
    let reply: [number, string];
    try {
      reply = await (this.client as unknown as FencedSetClient).nestLockFencedSetByGrant(
        key,
        fenceKey,
        value,
        fence,
        ttl === undefined ? '' : String(ttl),
        grant,
      );
    } catch (error) {
      if (error instanceof Error && /CROSSSLOT|same slot/i.test(error.message)) {
        throw new LockOptionsError(
          'fenceKey',
          fenceKey,
          `a key in the Redis Cluster slot of ${JSON.stringify(key)} (share its hash tag)`,
        );
      }
      // A copy without what the client sent (ioredis fails queued commands with a refused AUTH's own error).
      throw safeCause(error);
    }
    const [status, lastFence] = reply;
    if (Number(status) === -1) {
      throw new LockOptionsError(
        'fenceKey',
        fenceKey,
        'a key that holds nothing but fencing tokens (it holds other data)',
      );
    }
    return { written: Number(status) === 1, fence, lastFence: Number(lastFence) };
  }
}

/**
 * The token a write carries and the grant it comes from: a number as given (grant unknown, ''), or a Lock's token
 * for `lockKey` (default its first key) and a digest of its lease token, which names the grant without putting
 * the token itself (what releases the lock) beside the resource.
 */
function stampOf(fenceOrLock: number | Lock, lockKey: string | undefined): { fence: number; grant: string } {
  let fence: unknown = fenceOrLock;
  let grant = '';
  if (typeof fenceOrLock === 'object' && fenceOrLock !== null && 'fences' in fenceOrLock) {
    const name = lockKey ?? fenceOrLock.keys[0];
    if (!Object.prototype.hasOwnProperty.call(fenceOrLock.fences, name)) {
      throw new LockOptionsError('lockKey', lockKey, `one of the lock's keys (${fenceOrLock.keys.join(', ')})`);
    }
    fence = fenceOrLock.fences[name];
    // The grant that holds `name`: a reentrant handle carries an outer grant's fence for a key it borrowed.
    // Something shaped like a Lock without a token (a test double) shows no grant: as a bare number.
    const token: unknown =
      fenceOrLock instanceof HeldLock ? fenceOrLock.tokenOf(name) : (fenceOrLock as Partial<Lock>).token;
    if (typeof token === 'string' && token.length > 0)
      grant = createHash('sha256').update(token).digest('hex').slice(0, 32);
  }
  if (typeof fence !== 'number' || !Number.isSafeInteger(fence) || fence < 0) {
    throw new LockOptionsError('fence', fence, "a fencing token (a lock's `fence`: a whole number from 0)");
  }
  return { fence, grant };
}
