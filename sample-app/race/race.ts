/**
 * `npm run sample:race`: the lost-update race of the Redis `transfer_funds` example, for real.
 *
 * Starts a private redis-server and, twice, 3 instances of the sample app sharing it; seeds accounts,
 * fires concurrent random transfers spread over the instances, then sums the balances. Once with
 * LOCKS=off (the transfer's read-modify-write runs unlocked: money is lost or created, balances go
 * negative), once with locks on (the total is kept to the cent). Exits 1 if the locked run loses or creates
 * money, leaves a balance negative, or gets fewer than half of its transfers through.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { EmbeddedRedisServer, findFreePort, RedisServerNotFoundError } from '../src/config/embedded-redis-server';
import { AppInstance } from './app-instance';
import { printInterestRuns, printTable, type RaceResult } from './race-report';
import { fireTransfers } from './transfer-load';

const INSTANCES = 3;
const ACCOUNTS = 20;
const INITIAL_BALANCE = 2_500;
const TRANSFERS = 2_000;
const CONCURRENCY = 64;
const MAX_AMOUNT = 1_000;
const LOAD_TIME_LIMIT_MS = 120_000;

async function main(): Promise<number> {
  let redis: EmbeddedRedisServer;
  try {
    redis = await EmbeddedRedisServer.start();
  } catch (error) {
    if (error instanceof RedisServerNotFoundError) {
      console.error(`The race demo needs a real Redis shared by its instances: ${error.message}.`);
      return 1;
    }
    throw error;
  }
  console.log(`redis-server on ${redis.url} (pid ${redis.pid})`);
  try {
    const unlocked = await race('LOCKS=off', false, redis.url);
    const locked = await race('locks on', true, redis.url);
    console.log('');
    printTable([unlocked, locked], TRANSFERS);
    printInterestRuns([unlocked, locked]);
    console.log('');
    if (!unlocked.damaged) {
      console.log('The unlocked run happened to keep the total this time: the race is timing-dependent, run it again.');
    } else {
      console.log(`Without locks, ${describeDamage(unlocked)}.`);
      console.log('With one @Locked on both accounts, every transfer is all-or-nothing.');
    }
    for (const result of [unlocked, locked]) {
      if (result.load.failed === 0) continue;
      console.warn(`[${result.name}] ${result.load.failed} request(s) failed (neither 201, 409 nor 422), e.g.:`);
      for (const failure of result.load.failures) console.warn(`  ${failure}`);
      for (const line of result.problems) console.warn(`  log: ${line}`);
    }
    if (locked.damaged) {
      console.error(`FAIL: with locks on, ${describeDamage(locked)}.`);
      return 1;
    }
    if (locked.load.ok < locked.load.sent / 2) {
      console.error(`FAIL: with locks on, only ${locked.load.ok} of ${locked.load.sent} transfers went through.`);
      return 1;
    }
    console.log('OK: the locked run kept the total to the cent, and every balance >= 0.');
    return 0;
  } finally {
    await redis.stop();
  }
}

/** One run: 3 fresh instances, fresh accounts (named after the run), the load, the final balances. */
async function race(name: string, locks: boolean, redisUrl: string): Promise<RaceResult> {
  console.log(`\n[${name}] starting ${INSTANCES} instances...`);
  const ports = await distinctFreePorts(INSTANCES);
  const started = await Promise.allSettled(ports.map((port) => AppInstance.start({ port, redisUrl, locks })));
  const instances = started.flatMap((outcome) => (outcome.status === 'fulfilled' ? [outcome.value] : []));
  try {
    const failedStart = started.find((outcome) => outcome.status === 'rejected');
    if (failedStart) throw (failedStart as PromiseRejectedResult).reason;
    console.log(`[${name}] instances on ports ${ports.join(', ')}`);

    const prefix = locks ? 'locked' : 'unlocked';
    const accountIds = Array.from({ length: ACCOUNTS }, (_, index) => `${prefix}-${String(index).padStart(2, '0')}`);
    await Promise.all(accountIds.map((id, index) => deposit(instances[index % instances.length], id, INITIAL_BALANCE)));
    const totalBefore = ACCOUNTS * INITIAL_BALANCE;

    console.log(`[${name}] firing ${TRANSFERS} transfers, ${CONCURRENCY} at a time...`);
    const runStartedAt = Date.now();
    const load = await fireTransfers({
      instances,
      accountIds,
      transfers: TRANSFERS,
      concurrency: CONCURRENCY,
      maxAmount: MAX_AMOUNT,
      timeLimitMs: LOAD_TIME_LIMIT_MS,
    });
    const balances = await Promise.all(
      accountIds.map((id, index) => balanceOf(instances[index % instances.length], id)),
    );
    const totalAfter = balances.reduce((sum, balance) => sum + balance, 0);
    const negative = balances.filter((balance) => balance < 0).length;
    const interestRuns = instances.flatMap((instance) =>
      instance.lines
        .filter((line) => line.at >= runStartedAt && line.text.includes('Interest run by instance'))
        .map((line) => ({ at: line.at, port: instance.port })),
    );
    // Warnings and errors the instances logged during the load, to explain failed requests.
    const problems = instances
      .flatMap((instance) => instance.lines)
      .filter((line) => line.at >= runStartedAt && /\b(WARN|ERROR)\b/.test(line.text))
      .slice(0, 10)
      .map((line) => line.text);
    console.log(`[${name}] done in ${load.durationMs} ms`);
    return {
      name,
      load,
      totalBefore,
      totalAfter,
      negative,
      damaged: totalAfter !== totalBefore || negative > 0,
      interestRuns,
      problems,
    };
  } finally {
    await Promise.all(instances.map((instance) => instance.stop()));
  }
}

async function deposit(instance: AppInstance, id: string, amount: number): Promise<void> {
  const response = await fetch(`${instance.url}/accounts/${id}/deposit`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ amount }),
    signal: AbortSignal.timeout(10_000),
  });
  if (response.status !== 200) throw new Error(`deposit into ${id}: ${response.status} ${await response.text()}`);
}

async function balanceOf(instance: AppInstance, id: string): Promise<number> {
  const response = await fetch(`${instance.url}/accounts/${id}`, { signal: AbortSignal.timeout(10_000) });
  if (response.status !== 200) throw new Error(`balance of ${id}: ${response.status} ${await response.text()}`);
  return ((await response.json()) as { balance: number }).balance;
}

async function distinctFreePorts(count: number): Promise<number[]> {
  const ports = new Set<number>();
  while (ports.size < count) ports.add(await findFreePort());
  return [...ports];
}

function describeDamage(result: RaceResult): string {
  const difference = result.totalAfter - result.totalBefore;
  const parts: string[] = [];
  if (difference < 0) parts.push(`${-difference} cents vanished`);
  if (difference > 0) parts.push(`${difference} cents were created out of nothing`);
  if (result.negative > 0) parts.push(`${result.negative} balance(s) went below zero`);
  return parts.join(', and ');
}

// Ctrl-C: Node's 'exit' event then kills every instance and the redis-server (their exit hooks).
process.once('SIGINT', () => process.exit(130));
process.once('SIGTERM', () => process.exit(143));

main().then(
  async (code) => {
    // Let the last log lines flush before exiting.
    await sleep(10);
    process.exit(code);
  },
  (error: unknown) => {
    console.error(error instanceof Error ? (error.stack ?? error.message) : String(error));
    process.exit(1);
  },
);
