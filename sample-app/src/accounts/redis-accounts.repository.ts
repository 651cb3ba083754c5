import type { Redis, Result } from 'ioredis';
import { StaleFenceError } from '../common/bank-errors';
import type { Account } from './account';
import type { AccountsRepository, BalanceWrite } from './accounts.repository';

const ACCOUNT_IDS_KEY = 'bank:accounts';
const accountKey = (id: string): string => `bank:account:${id}`;

/**
 * The fenced write, atomic in Redis. KEYS[1] is the set of account ids, KEYS[2..] the account hashes
 * ({ balance, fence }); ARGV holds (id, balance, fence) per account, fence '' for an unfenced write.
 * First every fence is checked against the account's stored last fence (all or none is written), then the
 * balances and the new last fences are stored. Returns 0, or { index, lastFence } of the first stale write.
 */
const WRITE_FENCED_BALANCES = `
local count = #KEYS - 1
for i = 1, count do
  local fence = ARGV[3 * i]
  if fence ~= '' then
    local last = tonumber(redis.call('HGET', KEYS[i + 1], 'fence') or '0')
    if tonumber(fence) < last then
      return { i, last }
    end
  end
end
for i = 1, count do
  redis.call('HSET', KEYS[i + 1], 'balance', ARGV[3 * i - 1])
  if ARGV[3 * i] ~= '' then
    redis.call('HSET', KEYS[i + 1], 'fence', ARGV[3 * i])
  end
  redis.call('SADD', KEYS[1], ARGV[3 * i - 2])
end
return 0
`;

declare module 'ioredis' {
  interface RedisCommander<Context> {
    /** Defined by RedisAccountsRepository (ioredis caches the script by SHA: EVALSHA, EVAL on NOSCRIPT). */
    bankWriteFencedBalances(numberOfKeys: number, ...keysAndArgs: string[]): Result<0 | [number, number], Context>;
  }
}

/** Accounts as Redis hashes `bank:account:<id>` { balance, fence }, listed in the set `bank:accounts`. */
export class RedisAccountsRepository implements AccountsRepository {
  constructor(private readonly redis: Redis) {
    redis.defineCommand('bankWriteFencedBalances', { lua: WRITE_FENCED_BALANCES });
  }

  async find(id: string): Promise<Account | undefined> {
    const balance = await this.redis.hget(accountKey(id), 'balance');
    return balance === null ? undefined : { id, balance: Number(balance) };
  }

  async list(): Promise<Account[]> {
    const ids = await this.redis.smembers(ACCOUNT_IDS_KEY);
    const accounts = await Promise.all(ids.map((id) => this.find(id)));
    return accounts.filter((account): account is Account => account !== undefined);
  }

  async writeBalances(writes: readonly BalanceWrite[]): Promise<void> {
    const keys = [ACCOUNT_IDS_KEY, ...writes.map((write) => accountKey(write.id))];
    const args = writes.flatMap((write) => [
      write.id,
      String(write.balance),
      write.fence === undefined ? '' : String(write.fence),
    ]);
    const outcome = await this.redis.bankWriteFencedBalances(keys.length, ...keys, ...args);
    if (outcome !== 0) {
      const [index, lastFence] = outcome;
      const stale = writes[index - 1];
      throw new StaleFenceError(stale.id, stale.fence as number, lastFence);
    }
  }
}
