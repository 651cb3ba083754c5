/**
 * `npm run sample:jobs`: the scheduled interest job on 3 instances sharing one Redis, each tick run once.
 *
 * Every instance schedules the job every 2 s (INTEREST_CRON); their timers fire at the same tick but not at
 * the same instant. The job is `@Locked('job:interest', { wait: 0, onBusy: 'skip', minHold })`: the first
 * instance runs it, and because the lock is held for at least minHold (1.5 s here) after its grant, the
 * late instances find it busy and skip, although the run itself takes milliseconds. Shown twice: with
 * INTEREST_MIN_HOLD_MS=0 (the late instances may run the same tick again) and with minHold (exactly once).
 * Exits 1 unless, with minHold, each of at least 5 ticks ran exactly once.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { EmbeddedRedisServer, findFreePort, RedisServerNotFoundError } from '../src/config/embedded-redis-server';
import { AppInstance } from './app-instance';

const INSTANCES = 3;
const PERIOD_MS = 2_000;
const CRON = '*/2 * * * * *';
const MIN_HOLD_MS = 1_500;
const TICKS = 6;

interface TickRuns {
  /** Tick number (start of the period, in periods since the epoch) → ports of the instances that ran it. */
  readonly ticks: Map<number, number[]>;
}

async function observe(redisUrl: string, minHoldMs: number): Promise<TickRuns> {
  const instances: AppInstance[] = [];
  try {
    for (let index = 0; index < INSTANCES; index++) {
      instances.push(
        await AppInstance.start({
          port: await findFreePort(),
          redisUrl,
          locks: true,
          env: { INTEREST_CRON: CRON, INTEREST_MIN_HOLD_MS: String(minHoldMs) },
        }),
      );
    }
    // Whole periods only: start at the next tick boundary, stop at one.
    const firstTick = Math.ceil(Date.now() / PERIOD_MS) + 1;
    await sleep(Math.max(0, (firstTick + TICKS) * PERIOD_MS - Date.now() + PERIOD_MS / 2));
    const ticks = new Map<number, number[]>();
    for (let tick = firstTick; tick < firstTick + TICKS; tick++) ticks.set(tick, []);
    for (const instance of instances) {
      for (const line of instance.lines) {
        if (!line.text.includes('Interest run by instance')) continue;
        const tick = Math.floor(line.at / PERIOD_MS);
        ticks.get(tick)?.push(instance.port);
      }
    }
    return { ticks };
  } finally {
    await Promise.all(instances.map((instance) => instance.stop()));
  }
}

function describe(label: string, runs: TickRuns): string {
  const counts = [...runs.ticks.values()].map((ports) => ports.length);
  return `${label.padEnd(22)} runs per tick: ${counts.join(' ')}  (${counts.filter((count) => count === 1).length} of ${counts.length} ticks exactly once)`;
}

async function main(): Promise<number> {
  let redis: EmbeddedRedisServer;
  try {
    redis = await EmbeddedRedisServer.start();
  } catch (error) {
    if (error instanceof RedisServerNotFoundError) {
      console.error(`The jobs demo needs a real Redis shared by its instances: ${error.message}.`);
      return 1;
    }
    throw error;
  }
  console.log(
    `redis-server on ${redis.url}; ${INSTANCES} instances, the interest job every ${PERIOD_MS / 1000} s, ${TICKS} ticks`,
  );
  try {
    const without = await observe(redis.url, 0);
    console.log(describe('without minHold', without));
    const withMinHold = await observe(redis.url, MIN_HOLD_MS);
    console.log(describe(`minHold ${MIN_HOLD_MS} ms`, withMinHold));
    const counts = [...withMinHold.ticks.values()].map((ports) => ports.length);
    if (counts.length < 5 || counts.some((count) => count !== 1)) {
      console.error(`FAIL: with minHold, every tick must run exactly once; got ${counts.join(' ')}`);
      return 1;
    }
    console.log(`OK: with minHold, each of ${counts.length} ticks ran exactly once across ${INSTANCES} instances.`);
    return 0;
  } finally {
    await redis.stop();
  }
}

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    console.error(error);
    process.exit(1);
  },
);
