import Redis from 'ioredis';
import { LOCK_STORE } from '../../lib';
import type { LockStore } from '../../lib/stores/lock-store.interface';
import { createLockApp, uniqueKey } from '../support/lock-app';
import { eventually, type RedlockNodes, startRedlockNodes } from './helpers/redlock-nodes';

/** `nodes` takes URLs and ioredis options (the module owns those connections) and Redis instances (borrowed). */
describe('Redlock node connections (3 real Redis nodes)', () => {
  let nodes: RedlockNodes;
  beforeAll(async () => {
    nodes = await startRedlockNodes(3);
  });
  afterAll(() => nodes?.stop());

  it('a URL, an options object and a borrowed Redis instance; closing the module leaves the borrowed client open', async () => {
    const borrowed = new Redis(nodes.urls[2]);
    try {
      const { host, port } = nodes.servers[1];
      const app = await createLockApp({ nodes: [nodes.urls[0], { host, port }, borrowed], ttl: 2_000 });
      expect(app.module.get<LockStore>(LOCK_STORE).kind).toBe('redlock');
      const key = uniqueKey('mixed');
      const lock = await app.locks.acquire(key, { wait: 0 });
      await expect(app.locks.isLocked(key)).resolves.toBe(true);
      // Every node comes to hold it (each kind of connection did its part; the last may answer after the quorum).
      await eventually(
        async () =>
          (await Promise.all(nodes.inspectors.map((client) => client.exists(`lock:{${key}}`)))).every(Boolean),
        1_000,
        'held on all three nodes',
      );
      await expect(lock.release()).resolves.toBe(true);
      await app.close();

      await expect(borrowed.ping()).resolves.toBe('PONG');
      expect(borrowed.status).toBe('ready');
    } finally {
      borrowed.disconnect();
    }
  });
});
