import type { Logger } from '@nestjs/common';

/** A message logged again, when it keeps coming without the connection being ready in between, this often (ms). */
const REMIND_AFTER_MS = 60_000;

/**
 * What a lock connection logs of its own state: the first error of an outage and any different one after it
 * (a refused connection that becomes a timeout), not the same error again at each reconnection attempt (a 5 s
 * outage logged 26 warnings per process: trial 6); and, once the connection is ready after errors, that it is
 * ready, so the log says when the outage ended. Errors are compared without their numbers (ioredis' Sentinel
 * message names its retry delay, different at each attempt); one still coming a minute after it was logged is
 * logged again, for a connection that reports no readiness in between (a node-redis Cluster).
 */
export class ConnectionLog {
  /** The error last logged (numbers masked), until the connection is ready again. */
  private lastLogged: string | undefined;
  private lastLoggedAt = 0;
  /** How often it came again unlogged. */
  private repeats = 0;

  constructor(
    private readonly logger: Logger,
    private readonly label: string,
  ) {}

  error(message: string): void {
    const shape = message.replace(/\d+/g, '#');
    const now = performance.now();
    if (shape === this.lastLogged && now - this.lastLoggedAt < REMIND_AFTER_MS) {
      this.repeats++;
      return;
    }
    const repeated = shape === this.lastLogged && this.repeats > 0 ? ` (came ${this.repeats} more time(s) since it was last logged)` : '';
    this.lastLogged = shape;
    this.lastLoggedAt = now;
    this.repeats = 0;
    this.logger.warn(`Redis connection '${this.label}': ${message}${repeated}`);
  }

  ready(): void {
    if (this.lastLogged === undefined) return;
    const repeated = this.repeats > 0 ? `; the last error came ${this.repeats} more time(s) while reconnecting` : '';
    this.logger.log(`Redis connection '${this.label}' is ready (after the errors logged above${repeated})`);
    this.lastLogged = undefined;
    this.repeats = 0;
  }
}
