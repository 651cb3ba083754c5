// Probes a Redis store once at bootstrap and says in one line whether lock calls would work (or fails the bootstrap).
import { Inject, Injectable, Logger, type OnApplicationBootstrap } from '@nestjs/common';
import type { StoreHealthSource } from '../stores/store-health';
import { LOCK_OPTIONS, LOCK_STORE } from '../lock.constants';
import type { ResolvedLockOptions } from '../options/lock-options.interface';
import { LockService } from '../lock.service';
import { describeStore } from '../options/store-description';

/** The key the check inspects: a lock script on a key under the prefix, as every lock call runs one. */
const PROBE_KEY = 'startup-check';

/**
 * Asks a Redis store once at application bootstrap whether lock calls would work, and says so in one line:
 * connections open lazily, so a wrong host or password would otherwise stay silent until the first lock call.
 * The probe is the health indicator's (a PING per connection, each bounded by the command timeout), then one
 * read-only lock script on a key under the prefix (`inspect`), so that an ACL refusing scripts or keys shows
 * too. With `startupCheck: 'fail'` a store that does not answer fails the bootstrap, as a database module
 * does, after closing the connections it opened (Nest runs no shutdown hook after a failed bootstrap).
 */
@Injectable()
export class LockStartupCheck implements OnApplicationBootstrap {
  private readonly logger = new Logger('LockModule');

  constructor(
    @Inject(LOCK_OPTIONS) private readonly options: ResolvedLockOptions,
    @Inject(LOCK_STORE) private readonly store: StoreHealthSource,
    private readonly locks: LockService,
  ) {}

  async onApplicationBootstrap(): Promise<void> {
    // The in-process store always answers, and already warns at startup that it is one process's only.
    if (this.options.startupCheck === 'off' || this.store.kind === 'memory') return;
    const { failure, latencyMs } = await this.probe();
    const store = describeStore(this.options);
    if (failure === undefined) {
      this.logger.log(`Lock store ready: ${store} (answered in ${latencyMs ?? 0} ms)`);
      return;
    }
    if (this.options.startupCheck === 'fail') {
      await this.locks.onApplicationShutdown();
      throw failure;
    }
    this.logger.warn(
      `Lock store not ready at startup (${store}): ${failure.message} Lock calls fail until it answers; ` +
        `startupCheck: 'fail' stops the bootstrap instead.`,
    );
  }

  /** Why lock calls would fail now (none when they would work), and the PING's round trip. */
  private async probe(): Promise<{ failure?: Error; latencyMs?: number }> {
    const health = await this.store.health();
    if (!health.up) return { failure: health.error ?? new Error(health.message ?? 'it did not answer') };
    try {
      await this.locks.inspect(PROBE_KEY);
      return { latencyMs: health.latencyMs };
    } catch (error) {
      return { failure: error instanceof Error ? error : new Error(String(error)) };
    }
  }
}
