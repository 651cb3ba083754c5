// How a node sends its scripts: each bounded by a timeout, a write followed by WAIT, failures recorded and mapped,
// nothing new once closed.
import { ReplicasNotAcknowledgedError } from '../../errors/replicas-not-acknowledged.error';
import { StoreClosedError } from '../../errors/store-closed.error';
import type { MinReplicas } from '../../options/lock-options.interface';
import type { LockClient, LockScript, RedisArgument } from '../clients';
import type { LockKeyNames } from '../lock-store.interface';
import type { TokenOrder } from '../redlock/token-order';
import { withTimeout } from '../../util/with-timeout';
import { scriptError } from './node-errors';

/**
 * The lock connection of one node, as its operations use it. Every script is bounded by a timeout; a
 * connection failure rejects with the driver's error, which the stores turn into LockUnavailableError; a
 * caller's mistake (foreign data, CROSSSLOT) is an InvalidLockKeyError (see scriptError).
 *
 * With `minReplicas`, a script that writes a lease (acquire, extend, the fence write-back) is followed by
 * `WAIT replicas timeout` in the same round trip, and the write counts only when enough replicas acknowledged
 * it (see write).
 */
export class NodeConnection {
  /**
   * Set by close(): nothing is sent or opened afterwards but what finishes earlier work (a lent client stays usable to
   * its owner).
   */
  private closed = false;
  /**
   * True while a command that finishes earlier work is being sent (see sendPastClose): it goes out even once closed.
   */
  private sendingPastClose = false;
  /** Whether the last command failed (see `failing`). */
  private lastFailed = false;

  constructor(
    private readonly client: LockClient,
    private readonly minReplicas: MinReplicas | undefined,
    /** A Redlock node's: the commands of its chains go out even once closed (see TokenOrder.sendChained). */
    private readonly order: TokenOrder | undefined,
  ) {}

  /**
   * Whether the last command failed (as a rule: down, unreachable, timed out; the scripts answer foreign data
   * with codes, not errors).
   */
  get failing(): boolean {
    return this.lastFailed;
  }

  get isClosed(): boolean {
    return this.closed;
  }

  /** From now on, refuses new work (see refuseWhenClosed). */
  close(): void {
    this.closed = true;
  }

  /**
   * After close() nothing may be sent or opened: a caller still in a wait loop at shutdown would otherwise
   * open a new subscriber connection that nobody closes (and that reconnects forever once Redis is gone), or
   * keep attempting on a connection being closed.
   */
  refuseWhenClosed(): void {
    if (this.closed && !this.sendingPastClose && !this.order?.sendingChained) throw new StoreClosedError();
  }

  /** Sends a command that finishes an attempt made before close() (a take-back): past refuseWhenClosed. */
  sendPastClose<T>(command: () => Promise<T>): Promise<T> {
    this.sendingPastClose = true;
    try {
      return command();
    } finally {
      this.sendingPastClose = false;
    }
  }

  /** Runs a script, bounded by `timeoutMs`, its errors mapped by scriptError(). */
  run(
    script: LockScript,
    names: readonly string[],
    args: readonly RedisArgument[],
    timeoutMs: number,
    keys: readonly LockKeyNames[],
  ): Promise<unknown> {
    this.refuseWhenClosed();
    return this.client.runScript(script, names, args, timeoutMs).then(
      (reply) => this.succeeded(reply),
      (error: unknown) => this.failed(error, keys),
    );
  }

  /**
   * Runs a script that may write a lease. With minReplicas, WAIT follows it in the same round trip (its
   * timeout on top of the command's), and a write (`wrote(reply)`) that fewer replicas acknowledged rejects
   * with ReplicasNotAcknowledgedError.
   */
  async write(
    script: LockScript,
    names: readonly string[],
    args: readonly RedisArgument[],
    timeoutMs: number,
    keys: readonly LockKeyNames[],
    wrote: (reply: unknown) => boolean,
    what: 'grant' | 'renewal' | 'fence',
  ): Promise<unknown> {
    const minReplicas = this.minReplicas;
    if (!minReplicas) return this.run(script, names, args, timeoutMs, keys);
    this.refuseWhenClosed();
    const { reply, acks, resent } = await withTimeout(
      this.client.runScriptAndWait(script, names, args, minReplicas.replicas, minReplicas.timeout),
      timeoutMs + minReplicas.timeout,
    ).then(
      (answer) => this.succeeded(answer),
      (error: unknown) => this.failed(error, keys),
    );
    if (wrote(reply) && acks < minReplicas.replicas)
      throw new ReplicasNotAcknowledgedError(what, acks, minReplicas, resent);
    return reply;
  }

  /** Records whether `command` succeeded, for `failing`. */
  answered<T>(command: Promise<T>): Promise<T> {
    return command.then(
      (reply) => this.succeeded(reply),
      (error: unknown) => {
        this.lastFailed = true;
        throw error;
      },
    );
  }

  private succeeded<T>(reply: T): T {
    this.lastFailed = false;
    return reply;
  }

  /** A script failed: recorded for `failing`, and mapped by scriptError(). */
  private failed(error: unknown, keys: readonly LockKeyNames[]): never {
    this.lastFailed = true;
    return scriptError(error, keys);
  }
}
