import { Inject, Injectable, Logger, type OnApplicationBootstrap } from '@nestjs/common';
import type { StoreHealthSource } from './health/store-health';
import { LOCK_OPTIONS, LOCK_STORE } from './lock.constants';
import type { ResolvedLockOptions } from './options/lock-options.interface';
import { describeStore } from './store-description';

/**
 * Asks a Redis store once at application bootstrap whether it answers, and says so in one line: connections
 * open lazily, so a wrong host or password would otherwise stay silent until the first lock call. The probe is
 * the health indicator's (a PING per connection, each bounded by the command timeout). With `startupCheck:
 * 'fail'` a store that does not answer fails the bootstrap, as a database module does.
 */
@Injectable()
export class LockStartupCheck implements OnApplicationBootstrap {
  private readonly logger = new Logger('LockModule');

  constructor(
    @Inject(LOCK_OPTIONS) private readonly options: ResolvedLockOptions,
    @Inject(LOCK_STORE) private readonly store: StoreHealthSource,
  ) {}

  async onApplicationBootstrap(): Promise<void> {
    // The in-process store always answers, and already warns at startup that it is one process's only.
    if (this.options.startupCheck === 'off' || this.store.kind === 'memory') return;
    const health = await this.store.health();
    const store = describeStore(this.options);
    if (health.up) {
      this.logger.log(`Lock store ready: ${store} (answered in ${health.latencyMs ?? 0} ms)`);
      return;
    }
    const reason = health.error?.message ?? health.message ?? 'it did not answer';
    if (this.options.startupCheck === 'fail') {
      this.logger.error(`Lock store not ready at startup (${store}): ${reason}`);
      throw health.error ?? new Error(reason);
    }
    this.logger.warn(
      `Lock store not ready at startup (${store}): ${reason} Lock calls fail until it answers; ` +
        `startupCheck: 'fail' stops the bootstrap instead.`,
    );
  }
}
