import { setTimeout as sleep } from 'node:timers/promises';
import { type LockModuleOptions, type LockService, LockUnavailableError } from '../../../lib';
import { CLIENT_FAMILIES, type ClientFamilyName, type LentClient } from '../../support/client-families';
import type { RedisClusterProcess } from '../../support/redis-cluster';

/**
 * Cluster clients of a test file, lent to its modules (which never close them): `lend` makes one of a family,
 * `closeAll` closes every one made so far (afterAll).
 */
export function clusterClientLender(cluster: () => RedisClusterProcess): {
  lend(family: ClientFamilyName): Promise<LockModuleOptions['redis']>;
  closeAll(): Promise<void>;
} {
  const lent: LentClient[] = [];
  return {
    lend: async (family) => {
      const client = await CLIENT_FAMILIES[family].cluster(cluster().startupNodes);
      lent.push(client);
      return client.client as LockModuleOptions['redis'];
    },
    closeAll: async () => {
      await Promise.all(lent.splice(0).map((client) => client.close()));
    },
  };
}

/**
 * Takes and releases `key` once, so the service's connections are open and know the slot; retried for up to
 * `withinMs` while the cluster settles after a failover (unavailable, or not yet acknowledged).
 */
export async function warmUp(locks: LockService, key: string, withinMs = 10_000): Promise<void> {
  const deadline = performance.now() + withinMs;
  for (;;) {
    try {
      await (await locks.acquire(key, { wait: 5_000 })).release();
      return;
    } catch (error) {
      if (!(error instanceof LockUnavailableError) || performance.now() > deadline) throw error;
      await sleep(100);
    }
  }
}
