// A Terminus health indicator of the lock store (each Redlock node's answer too), built without loading Terminus.
import { Inject, Injectable, Optional } from '@nestjs/common';
import { LOCK_STORE } from '../lock.constants';
import type { NodeHealth, StoreHealthSource } from '../stores/store-health';
import { safeMessage } from '../errors/safe-cause';
import { LockService } from '../lock.service';

/** The details of one lock store's health, as Terminus shows them under the check's key. */
export type LockHealthDetails = {
  readonly status: 'up' | 'down';
  /** 'memory', 'redis' or 'redlock'. */
  readonly store: string;
  readonly latencyMs?: number;
  readonly message?: string;
  /** Redlock: how many nodes must answer. */
  readonly quorum?: number;
  /** Redlock: each node's answer. */
  readonly nodes?: readonly NodeHealth[];
  /** The leaderships this instance leads now (LockService.lead, @Leader), when it leads any. */
  readonly leading?: readonly string[];
};

/** Terminus's `HealthIndicatorResult` shape: `{ [key]: { status, ...details } }`. */
export type LockHealthIndicatorResult<Key extends string = string> = Record<Key, LockHealthDetails>;

/**
 * A health indicator for `@nestjs/terminus` (11 and 12): up while the lock store answers (Redlock: while a
 * quorum of nodes answers, with each node's answer), down otherwise; `leading` names the leaderships this
 * instance leads now, when it leads any.
 *
 * It returns Terminus's result shape rather than building it with Terminus's classes, so this library
 * never loads `@nestjs/terminus` (an optional peer): Terminus 11 and 12 count a returned `status: 'down'`
 * as down and answer 503. It never throws, so a store that is down is reported, not turned into a 500.
 *
 * ```ts
 * @Get('health') @HealthCheck()
 * check() { return this.health.check([() => this.locks.isHealthy('locks')]); }
 * ```
 */
@Injectable()
export class LockHealthIndicator {
  constructor(
    @Inject(LOCK_STORE) private readonly store: StoreHealthSource,
    @Optional() private readonly locks?: LockService,
  ) {}

  async isHealthy<Key extends string = 'lock'>(key: Key = 'lock' as Key): Promise<LockHealthIndicatorResult<Key>> {
    let details: LockHealthDetails;
    try {
      // `error` is the startup check's; a health detail shows its message.
      const { up, error: _error, ...health } = await this.store.health();
      details = { status: up ? 'up' : 'down', store: this.store.kind, ...health };
    } catch (error) {
      details = { status: 'down', store: this.store.kind, message: safeMessage(error) };
    }
    const leading = this.locks?.leading() ?? [];
    if (leading.length > 0) details = { ...details, leading };
    return { [key]: details } as LockHealthIndicatorResult<Key>;
  }
}
