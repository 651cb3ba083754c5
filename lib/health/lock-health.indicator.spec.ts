import { LockHealthIndicator } from './lock-health.indicator';
import type { StoreHealth, StoreHealthSource } from '../stores/store-health';

/** A store whose health is whatever the test says: the indicator's own logic, without Redis. */
function source(kind: string, health: () => Promise<StoreHealth>): StoreHealthSource {
  return { kind, health };
}

describe('LockHealthIndicator', () => {
  it("answers in Terminus's shape under the key it is given", async () => {
    const indicator = new LockHealthIndicator(source('redis', async () => ({ up: true, latencyMs: 0.4 })));
    expect(await indicator.isHealthy('locks')).toEqual({ locks: { status: 'up', store: 'redis', latencyMs: 0.4 } });
    expect(await indicator.isHealthy()).toEqual({ lock: { status: 'up', store: 'redis', latencyMs: 0.4 } });
  });

  it('reports a store that is down, with per-node detail, and never throws', async () => {
    const nodes = [
      { node: 'nodes[0]', status: 'up' as const, latencyMs: 1 },
      { node: 'nodes[1]', status: 'down' as const, message: 'connect ECONNREFUSED' },
      { node: 'nodes[2]', status: 'down' as const, message: 'timed out' },
    ];
    const redlock = new LockHealthIndicator(
      source('redlock', async () => ({ up: false, quorum: 2, nodes, message: '1 of 3 answered' })),
    );
    expect(await redlock.isHealthy()).toEqual({
      lock: { status: 'down', store: 'redlock', quorum: 2, nodes, message: '1 of 3 answered' },
    });
    const broken = new LockHealthIndicator(
      source('redis', async () => {
        throw new Error('unexpected');
      }),
    );
    expect(await broken.isHealthy()).toEqual({ lock: { status: 'down', store: 'redis', message: 'unexpected' } });
  });
});
