// What a lock connection logs of its own state: each kind of error of an outage once, then that it is ready.
import type { Logger } from '@nestjs/common';

/** A message logged again, when it keeps coming without the connection being ready in between, this often (ms). */
const REMIND_AFTER_MS = 60_000;

/** At most this many kinds of error are remembered per outage (their messages have their numbers masked). */
const KINDS_REMEMBERED = 16;

/** At most this many nodes of one Cluster with errors not followed by readiness are remembered. */
const NODES_REMEMBERED = 64;

/** One kind of error of the current outage: when it was last logged, and how often it came since. */
interface ErrorKind {
  loggedAt: number;
  repeats: number;
}

/**
 * What a lock connection logs of its own state: each kind of error of an outage once (a refused connection,
 * then a timeout), not again at each reconnection attempt (a few seconds' outage would otherwise log dozens
 * of warnings per process), also when two kinds alternate (an ioredis Cluster node: "connect ECONNREFUSED", then
 * "Connection is closed." at each of its attempts); and, once the connection is ready after errors, that it is ready,
 * so the log says when the outage ended. Errors are compared without their numbers (ioredis' Sentinel message names
 * its retry delay, different at each attempt); one still coming a minute after it was logged is logged again,
 * for a connection that reports no readiness in between (a node-redis Cluster).
 */
export class ConnectionLog {
  /** The kinds of error logged since the connection was last ready, by message with numbers masked. */
  private readonly kinds = new Map<string, ErrorKind>();

  constructor(
    private readonly logger: Logger,
    private readonly label: string,
  ) {}

  error(message: string): void {
    const shape = message.replace(/\d+/g, '#');
    const now = performance.now();
    const kind = this.kinds.get(shape);
    if (kind !== undefined && now - kind.loggedAt < REMIND_AFTER_MS) {
      kind.repeats++;
      return;
    }
    const repeated =
      kind !== undefined && kind.repeats > 0 ? ` (came ${kind.repeats} more time(s) since it was last logged)` : '';
    // Map order is insertion order: the kind first logged goes first (an endless variety must not grow it).
    this.kinds.delete(shape);
    if (this.kinds.size >= KINDS_REMEMBERED) this.kinds.delete(this.kinds.keys().next().value as string);
    this.kinds.set(shape, { loggedAt: now, repeats: 0 });
    this.logger.warn(`Redis connection '${this.label}': ${message}${repeated}`);
  }

  ready(): void {
    if (this.kinds.size === 0) return;
    const repeats = [...this.kinds.values()].reduce((sum, kind) => sum + kind.repeats, 0);
    const repeated = repeats > 0 ? `; they came ${repeats} more time(s) while reconnecting` : '';
    this.logger.log(`Redis connection '${this.label}' is ready (after the errors logged above${repeated})`);
    this.kinds.clear();
  }
}

/**
 * The nodes of one Cluster connection, each logged as a connection of its own (`<label>, node <host:port>`):
 * a Cluster client reports a node's outage with node events, not with its own 'error' (listening to 'error'
 * alone, nothing would be logged while one master is down). Keyed by address, so a node connection the client makes
 * again after an outage keeps the log of the one it replaces, until the node is ready (or 64 other nodes erred).
 */
export class ClusterNodeLogs {
  private readonly logs = new Map<string, ConnectionLog>();

  constructor(
    private readonly logger: Logger,
    private readonly label: string,
  ) {}

  error(address: string, message: string): void {
    let log = this.logs.get(address);
    if (!log) {
      // Not forgotten when the client drops the node (ioredis drops a dead one, then makes it again at the next
      // slot refresh: each would log its errors anew), so capped instead: the address first logged goes first.
      if (this.logs.size >= NODES_REMEMBERED) this.logs.delete(this.logs.keys().next().value as string);
      log = new ConnectionLog(this.logger, `${this.label}, node ${address}`);
      this.logs.set(address, log);
    }
    log.error(message);
  }

  ready(address: string): void {
    // Forgotten once ready: a new log is the same as a ready one.
    this.logs.get(address)?.ready();
    this.logs.delete(address);
  }
}
