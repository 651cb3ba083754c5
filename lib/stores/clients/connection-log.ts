import type { Logger } from '@nestjs/common';

/**
 * What a lock connection logs of its own state: the first error of an outage and any different one after it
 * (a refused connection that becomes a timeout), not the same error again at each reconnection attempt (a 5 s
 * outage logged 26 warnings per process: trial 6); and, once the connection is ready after errors, that it is
 * back, so the log says when the outage ended.
 */
export class ConnectionLog {
  /** The error last logged, until the connection is ready again. */
  private lastLogged: string | undefined;
  /** How often it came again unlogged. */
  private repeats = 0;

  constructor(
    private readonly logger: Logger,
    private readonly label: string,
  ) {}

  error(message: string): void {
    if (message === this.lastLogged) {
      this.repeats++;
      return;
    }
    this.lastLogged = message;
    this.logger.warn(`Redis connection '${this.label}': ${message}`);
  }

  ready(): void {
    if (this.lastLogged === undefined) return;
    const repeated = this.repeats > 0 ? ` (the last error came ${this.repeats} more time(s) while reconnecting)` : '';
    this.logger.log(`Redis connection '${this.label}' is ready again${repeated}`);
    this.lastLogged = undefined;
    this.repeats = 0;
  }
}
