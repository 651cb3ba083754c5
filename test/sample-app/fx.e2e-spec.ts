import type { INestApplication } from '@nestjs/common';
import { FxProviderRefusedError } from '../../sample-app/src/common/bank-errors';
import {
  FX_PROVIDER,
  FX_PROVIDER_MAX_CONCURRENT_CALLS,
  type SimulatedFxProvider,
} from '../../sample-app/src/fx/fx-provider';
import { startRedis, type RedisProcess } from '../support/redis-server';
import { bankClient, createBankApp } from './bank-app';

/**
 * A counting semaphore on an outbound call: `@Locked('fx-provider', { limit: 2 })` keeps the calls to an FX
 * provider with a quota of 2 concurrent calls within it, across two instances sharing one Redis.
 */
describe('sample app: GET /fx/:currency keeps the FX provider within its quota of concurrent calls', () => {
  let redis: RedisProcess;
  const apps: INestApplication[] = [];
  let provider: SimulatedFxProvider;

  beforeAll(async () => {
    redis = await startRedis();
    for (const instance of ['instance-a', 'instance-b']) {
      apps.push(await createBankApp({ store: { kind: 'redis', url: redis.url }, instance }));
    }
    // One stand-in provider per process: both instances call the same one, as they would a remote API.
    provider = apps[0].get<SimulatedFxProvider>(FX_PROVIDER);
    expect(apps[1].get(FX_PROVIDER)).toBe(provider);
  });
  beforeEach(() => provider.resetStats());

  afterAll(async () => {
    await Promise.all(apps.map((app) => app.close()));
    await redis?.stop();
  });

  it('8 concurrent quotes over two instances: all answered, never more than 2 calls in flight, none refused', async () => {
    const [first, second] = apps.map(bankClient);

    const responses = await Promise.all(
      Array.from({ length: 8 }, (_, i) => (i % 2 === 0 ? first : second).get('/fx/EUR')),
    );

    expect(responses.map((response) => response.status)).toEqual(Array(8).fill(200));
    expect(responses[0].body).toMatchObject({ currency: 'EUR', perUsd: 0.92 });
    expect(provider.stats).toEqual({ mostInFlight: FX_PROVIDER_MAX_CONCURRENT_CALLS, refused: 0, answered: 8 });
  });

  it('control: called without the semaphore, the provider refuses the calls over its quota', async () => {
    const outcomes = await Promise.allSettled(Array.from({ length: 4 }, () => provider.quote('EUR')));

    expect(outcomes.filter((outcome) => outcome.status === 'fulfilled')).toHaveLength(FX_PROVIDER_MAX_CONCURRENT_CALLS);
    for (const outcome of outcomes.filter((outcome) => outcome.status === 'rejected')) {
      expect(outcome.reason).toBeInstanceOf(FxProviderRefusedError);
    }
    expect(provider.stats.refused).toBe(2);
  });

  it('a currency the provider does not quote is 404, a malformed one 400', async () => {
    const client = bankClient(apps[0]);
    await client.get('/fx/XYZ').expect(404);
    await client.get('/fx/eur').expect(400);
  });
});
