import { ConsoleLogger, Injectable, type INestApplicationContext } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { setTimeout as sleep } from 'node:timers/promises';
import { LockModule, Locked, type LockModuleOptions } from '../../lib';
import { startRedisServers, type RedisProcess } from '../support/redis-server';

/** How long the ticked job's key stays held from its grant (the recipe's minHold). */
const MIN_HOLD_MS = 1_500;

/** What every instance's job runs record: which tick ran where. */
const runs: { instance: string; tick: number }[] = [];

/** A 10 ms job, as a @Cron/@Interval method would be, with the recipe: one attempt, skip when busy. */
@Injectable()
class TickJobs {
  instance = '';

  @Locked('job:tick-with-min-hold', { wait: 0, onBusy: 'skip', minHold: MIN_HOLD_MS })
  async withMinHold(tick: number): Promise<void> {
    await this.work(tick);
  }

  @Locked('job:tick-without-min-hold', { wait: 0, onBusy: 'skip' })
  async withoutMinHold(tick: number): Promise<void> {
    await this.work(tick);
  }

  private async work(tick: number): Promise<void> {
    runs.push({ instance: this.instance, tick });
    await sleep(10);
  }
}

async function startInstance(name: string, options: LockModuleOptions): Promise<INestApplicationContext> {
  const module = await Test.createTestingModule({ imports: [LockModule.forRoot(options)], providers: [TickJobs] })
    .setLogger(new ConsoleLogger({ logLevels: ['fatal'] }))
    .compile();
  const app = await module.init();
  app.get(TickJobs).instance = name;
  return app;
}

/**
 * Fires `job` on every instance at each tick, instance i's timer `offsetMs`·i ms after the first (timers fire
 * at the same tick, not the same instant), and returns how many times each tick ran. The next tick starts
 * `pauseMs` after every instance's call of this one returned.
 */
async function fireTicks(
  instances: readonly INestApplicationContext[],
  job: (jobs: TickJobs, tick: number) => Promise<void>,
  ticks: number,
  offsetMs: number,
  pauseMs: number,
): Promise<number[]> {
  runs.length = 0;
  for (let tick = 0; tick < ticks; tick++) {
    if (tick > 0) await sleep(pauseMs);
    await Promise.all(
      instances.map(async (instance, index) => {
        await sleep(index * offsetMs);
        await job(instance.get(TickJobs), tick);
      }),
    );
  }
  return Array.from({ length: ticks }, (_, tick) => runs.filter((run) => run.tick === tick).length);
}

describe.each([
  ['one Redis', 1],
  ['Redlock over 3 nodes', 3],
])('a scheduled job on 3 instances (%s)', (_label, nodeCount) => {
  let servers: RedisProcess[];
  let instances: INestApplicationContext[];

  beforeAll(async () => {
    servers = await startRedisServers(nodeCount);
    const options: LockModuleOptions =
      nodeCount === 1 ? { redis: servers[0].url } : { nodes: servers.map((server) => server.url) };
    instances = [];
    for (const name of ['a', 'b', 'c']) instances.push(await startInstance(name, options));
  });

  afterAll(async () => {
    await Promise.all((instances ?? []).map((instance) => instance.close()));
    await Promise.all((servers ?? []).map((server) => server.stop()));
  });

  it('with minHold: runs exactly once per tick over 3 ticks, although each run takes only 10 ms', async () => {
    // 60 ms apart: the last instance fires 120 ms after the first, so a stall of up to ~1.4 s (minHold against
    // that offset) still finds the key held. The next tick starts minHold + 100 ms after the run's release
    // returned: its hold-over (minHold from the grant, which came before the release was sent) has ended in
    // Redis by then, even when Redis itself stalled before applying the release, so no tick is skipped by all.
    const perTick = await fireTicks(instances, (jobs, tick) => jobs.withMinHold(tick), 3, 60, MIN_HOLD_MS + 100);
    expect(perTick).toEqual([1, 1, 1]);
  });

  it('without minHold (the control): a late instance finds the lock free and runs the tick again', async () => {
    // 100 ms apart: well after the first instance's 10 ms run, so a late instance finds the key free.
    const perTick = await fireTicks(instances, (jobs, tick) => jobs.withoutMinHold(tick), 2, 100, 500);
    expect(perTick.some((count) => count > 1)).toBe(true);
  });
});
