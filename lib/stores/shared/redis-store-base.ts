// What both Redis stores share: the release hub their waiters sleep on, and their lease timing.
import type { LockKeyNames, ReleaseWatch } from '../lock-store.interface';
import { ReleaseHub } from './release-hub';
import { type RedisStoreOptions, StoreTiming } from './timing';

/**
 * The part of LockStore both Redis stores implement alike: a waiter watches its keys on a ReleaseHub, which
 * subscribes to their release channels through the store (subscribeReleases), and every call is timed by the
 * store's options.
 */
export abstract class RedisStoreBase {
  protected readonly timing: StoreTiming;
  protected readonly hub: ReleaseHub;

  constructor(protected readonly options: RedisStoreOptions) {
    this.timing = new StoreTiming(options);
    this.hub = new ReleaseHub({
      subscribe: (channel) => this.subscribeReleases(channel),
      unsubscribe: (channel) => this.unsubscribeReleases(channel),
    });
  }

  watch(keys: readonly LockKeyNames[]): ReleaseWatch {
    return this.hub.watch(keys);
  }

  hasWaiters(keys: readonly LockKeyNames[]): boolean {
    return this.hub.hasSleepers(keys);
  }

  wakeWaiters(): void {
    this.hub.wakeAll();
  }

  /** Resolves once release announcements on `channel` reach the hub (hub.announce). */
  protected abstract subscribeReleases(channel: string): Promise<void>;

  protected abstract unsubscribeReleases(channel: string): Promise<void>;

  /** The command timeout for a call of this ttl (see StoreTiming). */
  protected timeout(ttl: number | undefined): number {
    return this.timing.timeout(ttl);
  }
}
