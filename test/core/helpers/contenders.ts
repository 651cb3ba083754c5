import type { LockModuleOptions, LockService } from '../../../lib';
import type { LockApp } from '../../support/lock-app';
import { eventually } from '../../support/eventually';
import type { StoreUnderTest } from '../../support/store-matrix';

/**
 * Two LockService instances contending for the same keys. On a Redis store they come from two separate
 * Nest modules, so each has its own store and connections, as two processes would. The in-process store
 * belongs to one module and two modules would not see each other's locks at all, so there both
 * contenders are the same service (two groups of callers of one module).
 */
export async function twoLockServices(
  store: StoreUnderTest,
  apps: { start(options: LockModuleOptions): Promise<LockApp> },
  extra?: LockModuleOptions,
): Promise<[LockService, LockService]> {
  const first = await apps.start(store.options(extra));
  if (!store.sharedAcrossModules) return [first.locks, first.locks];
  const second = await apps.start(store.options(extra));
  return [first.locks, second.locks];
}

/**
 * Resolves once `side` gets `key` (and lets it go at once), polling for up to `ms`: "free again within moments
 * of the hold-over's end", without a one-shot check that a stall of the loaded machine can put before it.
 */
export async function becomesFree(side: LockService, key: string, ms: number, options?: { limit?: number }): Promise<void> {
  await eventually(
    async () => {
      const next = await side.tryAcquire(key, options);
      if (!next) return false;
      await next.release();
      return true;
    },
    ms,
    `"${key}" free again`,
  );
}
