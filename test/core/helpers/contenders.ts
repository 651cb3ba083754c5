import type { LockModuleOptions, LockService } from '../../../lib';
import type { LockApp } from '../../support/lock-app';
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
