import type { LockModuleOptions, LockService } from '../../../lib';
import { eventually } from '../../support/eventually';
import { connected, type LockApp } from '../../support/lock-app';
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
  const first = await connected((await apps.start(store.options(extra))).locks);
  if (!store.sharedAcrossModules) return [first, first];
  const second = await connected((await apps.start(store.options(extra))).locks);
  return [first, second];
}

/**
 * Resolves once `side` gets `key` (and lets it go at once), polling for up to `ms`: "free again within moments
 * of the hold-over's end", without a one-shot check that a stall of the loaded machine can put before it.
 */
export async function becomesFree(
  side: LockService,
  key: string,
  ms: number,
  options?: { limit?: number },
): Promise<void> {
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

/** One attempt by `side` at `key`: true when refused; a grant is let go at once. */
export async function refusedNow(side: LockService, key: string, options?: { limit?: number }): Promise<boolean> {
  const probe = await side.tryAcquire(key, options);
  if (!probe) return true;
  await probe.release();
  return false;
}

/**
 * Checks a hold-over with one probe (`busy`): it must still find the key busy, unless it ran after the moment
 * the hold-over cannot end before (`notBefore`, e.g. taken before the holder's acquire + minHold). So a stall
 * of the loaded machine that puts the probe past the hold-over passes, and a hold-over that ended early fails.
 */
export async function busyUntil(notBefore: number, busy: () => Promise<boolean>, what: string): Promise<void> {
  if (await busy()) return;
  expect(
    performance.now(),
    `${what}: found free ${(notBefore - performance.now()).toFixed(0)} ms early`,
  ).toBeGreaterThanOrEqual(notBefore);
}
