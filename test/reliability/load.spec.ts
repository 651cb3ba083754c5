import Redis from 'ioredis';
import { setTimeout as sleep } from 'node:timers/promises';
import { findFreePort } from '../support/free-port';
import { startRedis, type RedisProcess } from '../support/redis-server';
import { INTEREST_MIN_HOLD_MS } from '../../sample-app/src/interest/interest.job';
import type { MemoryMessage } from './children/sample-app-server';
import { type ChildScript, trackChildren } from './support/child-process';
import { type LoadRequest, type LoadResult, runLoad } from './support/load-generator';
import { within } from './support/timing';

const ACCOUNTS = 1_000;
const OPENING_BALANCE = 10_000;
/** Requests per measured round (two rounds: memory is compared between them). */
const ROUND_REQUESTS = 3_000;
const CONNECTIONS = 32;
/** Every answer the bank may give under load: 200 deposit, 201 transfer, 409 busy, 422 not enough money. */
const EXPECTED_STATUSES = ['200', '201', '409', '422'];
const START_TIMEOUT_MS = 30_000;
const ROUND_TIMEOUT_MS = 30_000;

/**
 * The sample app as its own OS process (plain node, REDIS_URL of a test Redis, a free port of 127.0.0.1),
 * under a bounded load from this process (autocannon): deposits and transfers over 1000 accounts. No
 * answer but 200/201/409/422, no money created or lost, no lease left, memory flat from one round to the
 * next.
 */
describe('load: the sample app under autocannon', () => {
  const children = trackChildren();
  let server: RedisProcess;
  let data: Redis;

  beforeAll(async () => {
    server = await startRedis();
    data = new Redis(server.url);
  });
  afterAll(async () => {
    data?.disconnect();
    await server?.stop();
  });

  it(`${ACCOUNTS} accounts, 2 × ${ROUND_REQUESTS} deposits and transfers: only 2xx/409/422, money conserved, memory stable`, async () => {
    const port = await findFreePort();
    const app = children.start('sample-app-server', {
      execArgv: ['--expose-gc'],
      env: {
        PORT: String(port),
        REDIS_URL: server.url,
        REDIS_NODES: '',
        LOCK_STORE: '',
        LOCKS: 'on',
        INTEREST_RATE: '0',
      },
    });
    const url = `http://127.0.0.1:${port}`;
    await within(waitUntilHealthy(url, app), START_TIMEOUT_MS, 'the sample app start');

    const accountId = (index: number): string => `acct-${index}`;
    let deposited = 0;
    const countDeposits = (status: number, request: LoadRequest): void => {
      if (status === 200) deposited += (request.body as { amount: number }).amount;
    };

    // Opening: one deposit per account.
    let opened = 0;
    const opening = await within(
      runLoad({
        url,
        requests: ACCOUNTS,
        connections: CONNECTIONS,
        next: () => ({
          method: 'POST',
          path: `/accounts/${accountId(opened++ % ACCOUNTS)}/deposit`,
          body: { amount: OPENING_BALANCE },
        }),
        answered: countDeposits,
      }),
      ROUND_TIMEOUT_MS,
      'opening the accounts',
    );
    expect(opening.statuses).toEqual({ '200': ACCOUNTS });
    const before = await memoryOf(app);

    /** Half transfers between two random accounts, half deposits into one. */
    const mixed = (): LoadRequest => {
      const from = randomInt(ACCOUNTS);
      if (Math.random() < 0.5)
        return { method: 'POST', path: `/accounts/${accountId(from)}/deposit`, body: { amount: 1 + randomInt(100) } };
      const to = (from + 1 + randomInt(ACCOUNTS - 1)) % ACCOUNTS;
      return {
        method: 'POST',
        path: '/transfers',
        body: { from: accountId(from), to: accountId(to), amount: 1 + randomInt(5_000) },
      };
    };
    const rounds: LoadResult[] = [];
    const memory = [before];
    for (let round = 0; round < 2; round++) {
      const result = await within(
        runLoad({ url, requests: ROUND_REQUESTS, connections: CONNECTIONS, next: mixed, answered: countDeposits }),
        ROUND_TIMEOUT_MS,
        `load round ${round + 1}`,
      );
      rounds.push(result);
      memory.push(await memoryOf(app));
    }

    const mb = (bytes: number): string => `${(bytes / 1024 / 1024).toFixed(1)} MB`;
    for (const [index, round] of rounds.entries()) {
      console.log(
        `load round ${index + 1}: ${round.sent} requests over ${ACCOUNTS} accounts, ${CONNECTIONS} connections, ` +
          `${(round.durationMs / 1000).toFixed(1)} s (${Math.round(round.requestsPerSecond)} req/s); statuses ${JSON.stringify(round.statuses)}, ` +
          `errors ${round.errors}, timeouts ${round.timeouts}; latency p50 ${round.p50} ms, p99 ${round.p99} ms, max ${round.max} ms`,
      );
    }
    console.log(
      `load memory (after GC): ${memory.map((m, i) => `${['after opening', 'after round 1', 'after round 2'][i]} rss ${mb(m.rss)} heap ${mb(m.heapUsed)}`).join('; ')}`,
    );

    for (const round of rounds) {
      expect(round.sent).toBe(ROUND_REQUESTS);
      expect([round.errors, round.timeouts]).toEqual([0, 0]);
      const unexpected = Object.keys(round.statuses).filter((status) => !EXPECTED_STATUSES.includes(status));
      expect(unexpected).toEqual([]);
      expect((round.statuses['200'] ?? 0) + (round.statuses['201'] ?? 0)).toBeGreaterThan(ROUND_REQUESTS / 2);
    }
    // Transfers move money and deposits add it: the sum of the balances is exactly what was deposited.
    const balances = await Promise.all(
      Array.from({ length: ACCOUNTS }, (_, index) => data.hget(`bank:account:${accountId(index)}`, 'balance')),
    );
    expect(balances.reduce((sum, balance) => sum + Number(balance), 0)).toBe(deposited);
    expect(balances.every((balance) => Number(balance) >= 0)).toBe(true);
    // Every account's lease was released (the interest job's lock stays for its minHold after a run, and the
    // ledger auditor's leadership is held while the app runs: it must be gone after the shutdown, below).
    const running = ['bank:lock:{job:interest}', 'bank:lock:{leader:ledger-auditor}'];
    const leases = (await data.keys('bank:lock:*')).filter((key) => !key.endsWith(':fence'));
    expect(leases.filter((key) => !running.includes(key))).toEqual([]);
    // Flat from one round to the next: a per-request leak of even 2 KB would add 6 MB.
    expect(memory[2].heapUsed - memory[1].heapUsed).toBeLessThan(6 * 1024 * 1024);
    expect(memory[2].rss - memory[1].rss).toBeLessThan(64 * 1024 * 1024);

    app.signal('SIGTERM');
    expect((await app.exitWithin(10_000)).code).toBe(0);
    expect(app.reportedFaults).toEqual([]);
    // And after the shutdown, nothing but fence counters remains under the lock prefix, and the interest
    // job's lock if a run held it over (minHold): it ends by itself, within minHold.
    const left = (await data.keys('bank:lock:*')).filter((key) => !key.endsWith(':fence'));
    expect(left.filter((key) => key !== 'bank:lock:{job:interest}')).toEqual([]);
    if (left.length > 0) expect(await data.pttl('bank:lock:{job:interest}')).toBeLessThanOrEqual(INTEREST_MIN_HOLD_MS);
  });
});

async function waitUntilHealthy(url: string, app: ChildScript): Promise<void> {
  for (;;) {
    if (app.reportedFaults.length > 0) throw new Error(`the sample app failed to start:\n${app.output()}`);
    try {
      const response = await fetch(`${url}/health`, { signal: AbortSignal.timeout(1_000) });
      if (response.status === 200) return;
    } catch {
      // Not listening yet.
    }
    await sleep(100);
  }
}

async function memoryOf(app: ChildScript): Promise<MemoryMessage> {
  app.send({ type: 'memory' });
  return app.next<MemoryMessage>('memory', 10_000);
}

function randomInt(below: number): number {
  return Math.floor(Math.random() * below);
}
