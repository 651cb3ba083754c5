import type { INestApplication } from '@nestjs/common';
import { setTimeout as sleep } from 'node:timers/promises';
import { LockService } from '../../lib';
import { accountLockKey } from '../../sample-app/src/accounts/account';
import { AccountsService } from '../../sample-app/src/accounts/accounts.service';
import { StaleFenceError } from '../../sample-app/src/common/bank-errors';
import { TransfersService } from '../../sample-app/src/transfers/transfers.service';
import { startRedis, type RedisProcess } from '../support/redis-server';
import { accountId, bankClient, createBankApp } from './bank-app';

/** The sample app on a real redis-server: the endpoints, the locking of transfers, and the fences. */
describe('sample app (bank) on Redis', () => {
  let redis: RedisProcess;
  let app: INestApplication;
  let client: ReturnType<typeof bankClient>;

  beforeAll(async () => {
    redis = await startRedis();
    app = await createBankApp({ store: { kind: 'redis', url: redis.url } });
    client = bankClient(app);
  });

  afterAll(async () => {
    await app?.close();
    await redis?.stop();
  });

  /** Opens accounts with the given balances. */
  async function open(...balances: number[]): Promise<string[]> {
    const ids = balances.map(() => accountId('acct'));
    for (const [index, id] of ids.entries()) await client.deposit(id, balances[index]).expect(200);
    return ids;
  }

  it('GET /health answers 200 and names the store', async () => {
    const response = await client.get('/health').expect(200);
    expect(response.body).toMatchObject({ status: 'ok', info: { locks: { status: 'up', store: 'redis' } } });
  });

  it('a deposit opens the account, adds up, and is stored in a Redis hash', async () => {
    const id = accountId('deposit');
    expect((await client.deposit(id, 1_000).expect(200)).body).toEqual({ id, balance: 1_000 });
    expect((await client.deposit(id, 250).expect(200)).body).toEqual({ id, balance: 1_250 });
    expect((await client.get(`/accounts/${id}`).expect(200)).body).toEqual({ id, balance: 1_250 });
    expect(await redis.command('HGET', `bank:account:${id}`, 'balance')).toBe('1250');
  });

  it('GET of an account never opened is 404', async () => {
    const response = await client.get(`/accounts/${accountId('nobody')}`).expect(404);
    expect(response.body.message).toMatch(/does not exist/);
  });

  it('a transfer moves the amount: 201 with both balances', async () => {
    const [from, to] = await open(1_000, 200);
    const response = await client.transfer({ from, to, amount: 300 }).expect(201);
    expect(response.body).toEqual({ from: { id: from, balance: 700 }, to: { id: to, balance: 500 }, amount: 300 });
    expect(await client.balance(from)).toBe(700);
    expect(await client.balance(to)).toBe(500);
  });

  it('an overdraft is 422 with a clear message, and changes neither balance', async () => {
    const [from, to] = await open(100, 50);
    const response = await client.transfer({ from, to, amount: 101 }).expect(422);
    expect(response.body.message).toBe(`Insufficient funds: account ${from} has 100, the transfer needs 101`);
    expect(await client.balance(from)).toBe(100);
    expect(await client.balance(to)).toBe(50);
  });

  it('a transfer from or to an account never opened is 404, and changes nothing', async () => {
    const [existing] = await open(100);
    await client.transfer({ from: existing, to: accountId('ghost'), amount: 10 }).expect(404);
    await client.transfer({ from: accountId('ghost'), to: existing, amount: 10 }).expect(404);
    expect(await client.balance(existing)).toBe(100);
  });

  describe('bad transfer bodies are 400 and change nothing', () => {
    // `message` must appear in the response: it names what is wrong.
    const cases: [string, (from: string, to: string) => object, string][] = [
      ['missing from', (_from, to) => ({ to, amount: 10 }), 'body.from'],
      ['missing to', (from) => ({ from, amount: 10 }), 'body.to'],
      ['missing amount', (from, to) => ({ from, to }), 'amount must be a positive number'],
      ['negative amount', (from, to) => ({ from, to, amount: -5 }), 'amount must be a positive number'],
      ['zero amount', (from, to) => ({ from, to, amount: 0 }), 'amount must be a positive number'],
      ['numeric string amount', (from, to) => ({ from, to, amount: '10' }), 'amount must be an integer number'],
      ['non-numeric amount', (from, to) => ({ from, to, amount: 'ten' }), 'amount must be an integer number'],
      ['fractional amount', (from, to) => ({ from, to, amount: 1.5 }), 'amount must be an integer number'],
      ['from = to', (from) => ({ from, to: from, amount: 10 }), 'to must differ from from'],
      ['an account id with a space', (from) => ({ from, to: 'a b', amount: 10 }), 'to must be 1 to 64 letters'],
      ['an object as from', (_from, to) => ({ from: { id: 'x' }, to, amount: 10 }), 'body.from'],
      ['an unknown field', (from, to) => ({ from, to, amount: 10, memo: 'hi' }), 'property memo should not exist'],
    ];

    it.each(cases)('%s', async (_label, makeBody, message) => {
      const [from, to] = await open(1_000, 1_000);
      const response = await client.transfer(makeBody(from, to)).expect(400);
      expect(JSON.stringify(response.body.message)).toContain(message);
      expect(await client.balance(from)).toBe(1_000);
      expect(await client.balance(to)).toBe(1_000);
    });
  });

  it.each([
    ['zero', 0],
    ['negative', -1],
    ['a numeric string', '5'],
    ['missing', undefined],
  ])('a deposit of %s amount is 400 and opens nothing', async (_label, amount) => {
    const id = accountId('bad-deposit');
    await client.deposit(id, amount).expect(400);
    await client.get(`/accounts/${id}`).expect(404);
  });

  it('concurrent transfers between few accounts keep the total and never overdraw', async () => {
    const ids = await open(1_000, 1_000, 1_000, 1_000, 1_000);
    const transfers = Array.from({ length: 150 }, (_, index) => {
      const from = ids[index % ids.length];
      // An offset of 1 to length - 1: never the source account.
      const to = ids[(index + 1 + (index % (ids.length - 1))) % ids.length];
      return client.transfer({ from, to, amount: 50 + ((index * 37) % 400) });
    });
    const statuses = (await Promise.all(transfers)).map((response) => response.status);

    expect(statuses.filter((status) => ![201, 409, 422].includes(status))).toEqual([]);
    expect(statuses.filter((status) => status === 201).length).toBeGreaterThan(0);
    const balances = await Promise.all(ids.map((id) => client.balance(id)));
    expect(balances.reduce((sum, balance) => sum + balance, 0)).toBe(5_000);
    expect(balances.filter((balance) => balance < 0)).toEqual([]);
  });

  describe('fencing', () => {
    /** Waits until the store no longer holds `key` (its lease expired), within 5 s. */
    async function untilExpired(key: string): Promise<void> {
      const locks = app.get(LockService);
      const deadline = performance.now() + 5_000;
      while (await locks.isLocked(key)) {
        if (performance.now() > deadline) throw new Error(`${key} still locked after 5 s`);
        await sleep(25);
      }
    }

    it('refuses the write of a holder whose lock expired and was granted to another writer', async () => {
      const [id] = await open(100);
      const locks = app.get(LockService);
      // A holder that stalls past its lease (a GC pause, a slow call): a short ttl and no renewal.
      const stalled = await locks.acquire(accountLockKey(id), { ttl: 300, autoExtend: false });
      await untilExpired(accountLockKey(id));
      // Meanwhile a request takes the lock (with a higher fence) and writes.
      await client.deposit(id, 5).expect(200);

      // The stalled holder resumes and writes the balance it computed: refused by the fence.
      const accounts = app.get(AccountsService);
      await expect(locks.runWithLock(stalled, () => accounts.deposit(id, 1_000))).rejects.toThrow(StaleFenceError);
      expect(await client.balance(id)).toBe(105);
      expect(await stalled.release()).toBe(false);
    });

    it('a stalled transfer writes neither account when one of its fences is stale', async () => {
      const [from, to] = await open(500, 500);
      const locks = app.get(LockService);
      const stalled = await locks.acquire([accountLockKey(from), accountLockKey(to)], { ttl: 300, autoExtend: false });
      await untilExpired(accountLockKey(to));
      await client.deposit(to, 1).expect(200);

      const transfers = app.get(TransfersService);
      await expect(locks.runWithLock(stalled, () => transfers.transfer({ from, to, amount: 100 }))).rejects.toThrow(
        StaleFenceError,
      );
      expect(await client.balance(from)).toBe(500);
      expect(await client.balance(to)).toBe(501);
      await stalled.release();
    });

    it('stores the fence of the last write next to the balance', async () => {
      const [id] = await open(100);
      const locks = app.get(LockService);
      const lock = await locks.acquire(accountLockKey(id));
      try {
        await locks.runWithLock(lock, () => app.get(AccountsService).deposit(id, 1));
      } finally {
        await lock.release();
      }
      expect(await redis.command('HGET', `bank:account:${id}`, 'fence')).toBe(String(lock.fence));
    });
  });
});
