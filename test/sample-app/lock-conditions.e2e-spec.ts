import { Logger, type INestApplication } from '@nestjs/common';
import { setTimeout as sleep } from 'node:timers/promises';
import { LockService, LockTesting, LockUnavailableError } from '../../lib';
import { accountLockKey } from '../../sample-app/src/accounts/account';
import { AccountsService } from '../../sample-app/src/accounts/accounts.service';
import { StaleFenceError } from '../../sample-app/src/common/bank-errors';
import { InterestJob } from '../../sample-app/src/interest/interest.job';
import { accountId, bankClient, createBankApp } from './bank-app';

/** POST /transfers waits this long for busy accounts before answering 409 (its @Locked `wait`). */
const TRANSFER_WAIT_MS = 5_000;

/**
 * What the bank does when its locks are busy, lost or unreachable, tested in one process without Redis: the
 * app on the in-process store, and LockTesting putting the locks in the conditions another instance, a lost
 * lease or Redis down would.
 */
describe('sample app: lock conditions, without Redis (LockTesting)', () => {
  let app: INestApplication;
  let client: ReturnType<typeof bankClient>;
  let testing: LockTesting;

  beforeAll(async () => {
    app = await createBankApp({ store: { kind: 'memory' }, interestRate: 0.1 });
    client = bankClient(app);
    testing = LockTesting.from(app);
  });

  afterAll(async () => {
    testing?.makeAvailable();
    await app?.close();
  });

  describe('a transfer whose account another instance holds', () => {
    it(`answers 409 with Retry-After once its ${TRANSFER_WAIT_MS} ms wait runs out, and moves no money`, async () => {
      const [from, to] = [accountId('busy-from'), accountId('busy-to')];
      await client.deposit(from, 1_000).expect(200);
      await client.deposit(to, 100).expect(200);
      const held = await testing.holdElsewhere(accountLockKey(to), { instance: 'port 3002, pid 4711' });
      try {
        const startedAt = performance.now();
        const response = await client.transfer({ from, to, amount: 300 });
        expect(response.status).toBe(409);
        expect(performance.now() - startedAt).toBeGreaterThanOrEqual(TRANSFER_WAIT_MS - 50);
        expect(Number(response.headers['retry-after'])).toBeGreaterThanOrEqual(1);
        expect(response.body).toMatchObject({
          statusCode: 409,
          code: 'LOCK_BUSY',
          keys: [accountLockKey(from), accountLockKey(to)],
        });
      } finally {
        await held.release();
      }
      expect(await client.balance(from)).toBe(1_000);
      expect(await client.balance(to)).toBe(100);
    });

    it('goes through (201) as soon as that instance releases the account', async () => {
      const [from, to] = [accountId('released-from'), accountId('released-to')];
      await client.deposit(from, 1_000).expect(200);
      await client.deposit(to, 100).expect(200);
      const held = await testing.holdElsewhere(accountLockKey(from));
      const transfer = client.transfer({ from, to, amount: 300 }).then((response) => response);
      await sleep(300);
      const releasedAt = performance.now();
      await held.release();
      expect((await transfer).status).toBe(201);
      // Woken by the release, not by a timer: well within the wait.
      expect(performance.now() - releasedAt).toBeLessThan(1_000);
      expect(await client.balance(from)).toBe(700);
      expect(await client.balance(to)).toBe(400);
    });

    it("goes through (201) once that instance's lease runs out (it crashed holding the account)", async () => {
      const [from, to] = [accountId('crashed-from'), accountId('crashed-to')];
      await client.deposit(from, 500).expect(200);
      await client.deposit(to, 1).expect(200);
      const heldAt = performance.now();
      await testing.holdElsewhere(accountLockKey(to), { ttl: 1_000 });
      await client.transfer({ from, to, amount: 200 }).expect(201);
      expect(performance.now() - heldAt).toBeGreaterThanOrEqual(990);
      expect(await client.balance(to)).toBe(201);
    });
  });

  it("a deposit whose account lock was lost midway is refused by its fence (StaleFenceError, the app's 409), not written over a newer one", async () => {
    const id = accountId('lost');
    await client.deposit(id, 100).expect(200);
    const locks = app.get(LockService);
    const accounts = app.get(AccountsService);
    const stale = locks.withLock(accountLockKey(id), async (lock) => {
      // Lost while this holder works (paused past its lease, say): another request takes the account and deposits.
      await testing.loseHeld(accountLockKey(id));
      await client.deposit(id, 10).expect(200);
      expect(lock.signal.aborted).toBe(true);
      // A holder that does not check its signal still writes: the fence stops it.
      return accounts.deposit(id, 1_000);
    });
    await expect(stale).rejects.toBeInstanceOf(StaleFenceError);
    expect(await client.balance(id)).toBe(110);
  });

  describe('the interest job', () => {
    it('skips its tick while another instance holds job:interest, and credits the interest at the next', async () => {
      const id = accountId('interest');
      await client.deposit(id, 1_000).expect(200);
      const job = app.get(InterestJob);
      const held = await testing.holdElsewhere('job:interest');
      await expect(job.applyInterest()).resolves.toBeUndefined();
      expect(await client.balance(id)).toBe(1_000);
      await held.release();
      await expect(job.applyInterest()).resolves.toMatchObject({ instance: 'test' });
      expect(await client.balance(id)).toBe(1_100);
    });
  });

  describe('the lock store unavailable', () => {
    it('answers 503 to transfers, deposits and reports, and reports itself down on /health; plain reads still answer; all back once available', async () => {
      const [from, to] = [accountId('down-from'), accountId('down-to')];
      await client.deposit(from, 1_000).expect(200);
      await client.deposit(to, 1).expect(200);
      testing.makeUnavailable();
      try {
        expect((await client.transfer({ from, to, amount: 100 }).expect(503)).body).toMatchObject({
          code: 'LOCK_UNAVAILABLE',
        });
        await client.deposit(from, 50).expect(503);
        // The health check's failure is logged as an ERROR by Terminus (kept out of the test output).
        const errors = vi.spyOn(Logger.prototype, 'error').mockImplementation(() => undefined);
        try {
          // withLock in ReportsService, under a plain route: the lock error maps itself, as on a @Locked route.
          expect((await client.get(`/reports/${from}`).expect(503)).body).toMatchObject({ code: 'LOCK_UNAVAILABLE' });
          expect(errors).not.toHaveBeenCalledWith(expect.any(LockUnavailableError));
          const health = await client.get('/health').expect(503);
          expect(health.body).toMatchObject({ status: 'error', error: { locks: { status: 'down', store: 'memory' } } });
        } finally {
          errors.mockRestore();
        }
        // A balance read takes no lock.
        expect(await client.balance(from)).toBe(1_000);
        // The interest job does not run, nor is it skipped (a store that does not answer is not a key held elsewhere):
        // its tick fails with the store's error.
        await expect(app.get(InterestJob).applyInterest()).rejects.toBeInstanceOf(LockUnavailableError);
      } finally {
        testing.makeAvailable();
      }
      await client.get('/health').expect(200);
      await client.transfer({ from, to, amount: 100 }).expect(201);
      expect(await client.balance(to)).toBe(101);
    });
  });
});
