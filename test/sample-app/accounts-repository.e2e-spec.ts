import { Redis } from 'ioredis';
import type { AccountsRepository } from '../../sample-app/src/accounts/accounts.repository';
import { MemoryAccountsRepository } from '../../sample-app/src/accounts/memory-accounts.repository';
import { RedisAccountsRepository } from '../../sample-app/src/accounts/redis-accounts.repository';
import { StaleFenceError } from '../../sample-app/src/common/bank-errors';
import { startRedis, type RedisProcess } from '../support/redis-server';
import { accountId } from './account-ids';

/** The fenced write of both AccountsRepository implementations: the Lua script and its in-memory twin. */
describe.each(['redis', 'memory'] as const)('%s AccountsRepository: fenced balance writes', (kind) => {
  let redis: RedisProcess | undefined;
  let client: Redis | undefined;
  let repository: AccountsRepository;

  beforeAll(async () => {
    if (kind === 'redis') {
      redis = await startRedis();
      client = new Redis(redis.url);
      repository = new RedisAccountsRepository(client);
    } else {
      repository = new MemoryAccountsRepository();
    }
  });

  afterAll(async () => {
    client?.disconnect();
    await redis?.stop();
  });

  it('accepts a fence that is higher than or equal to the last one, refuses a lower one', async () => {
    const id = accountId('fence');
    await repository.writeBalances([{ id, balance: 100, fence: 5 }]);
    await repository.writeBalances([{ id, balance: 110, fence: 5 }]);

    const refused = repository.writeBalances([{ id, balance: 999, fence: 4 }]);
    await expect(refused).rejects.toThrow(StaleFenceError);
    await expect(refused).rejects.toMatchObject({ accountId: id, fence: 4, lastFence: 5 });
    expect(await repository.find(id)).toEqual({ id, balance: 110 });

    await repository.writeBalances([{ id, balance: 120, fence: 9 }]);
    await expect(repository.writeBalances([{ id, balance: 999, fence: 8 }])).rejects.toThrow(StaleFenceError);
    expect(await repository.find(id)).toEqual({ id, balance: 120 });
  });

  it('writes all the balances or none: one stale fence refuses the whole write', async () => {
    const [a, b] = [accountId('pair'), accountId('pair')];
    await repository.writeBalances([
      { id: a, balance: 100, fence: 1 },
      { id: b, balance: 100, fence: 3 },
    ]);

    await expect(
      repository.writeBalances([
        { id: a, balance: 50, fence: 10 },
        { id: b, balance: 150, fence: 2 },
      ]),
    ).rejects.toMatchObject({ accountId: b, fence: 2, lastFence: 3 });
    expect(await repository.find(a)).toEqual({ id: a, balance: 100 });
    expect(await repository.find(b)).toEqual({ id: b, balance: 100 });

    // The refused write did not raise a's last fence either: 2 is still accepted there.
    await repository.writeBalances([{ id: a, balance: 60, fence: 2 }]);
    expect(await repository.find(a)).toEqual({ id: a, balance: 60 });
  });

  it('does not check an unfenced write (LOCKS=off), nor lower the last fence with it', async () => {
    const id = accountId('unfenced');
    await repository.writeBalances([{ id, balance: 10, fence: 7 }]);
    await repository.writeBalances([{ id, balance: 20, fence: undefined }]);
    expect(await repository.find(id)).toEqual({ id, balance: 20 });
    await expect(repository.writeBalances([{ id, balance: 30, fence: 6 }])).rejects.toThrow(StaleFenceError);
  });

  it('finds nothing for an account never written, and lists the written ones', async () => {
    expect(await repository.find(accountId('never'))).toBeUndefined();
    const id = accountId('listed');
    await repository.writeBalances([{ id, balance: 42, fence: 1 }]);
    expect(await repository.list()).toContainEqual({ id, balance: 42 });
  });
});
