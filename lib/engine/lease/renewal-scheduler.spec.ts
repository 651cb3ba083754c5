import { RenewalScheduler, type ScheduledTask } from './renewal-scheduler';

function task(log: string[], name: string): ScheduledTask {
  return { dueAt: 0, heapIndex: -1, run: () => log.push(name) };
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('RenewalScheduler', () => {
  it('runs tasks in due-time order, each once', async () => {
    const scheduler = new RenewalScheduler();
    const log: string[] = [];
    const now = performance.now();
    scheduler.schedule(task(log, 'c'), now + 30);
    scheduler.schedule(task(log, 'a'), now + 10);
    scheduler.schedule(task(log, 'b'), now + 20);
    await sleep(60);
    expect(log).toEqual(['a', 'b', 'c']);
    expect(scheduler.size).toBe(0);
  });

  it('does not run a removed task and keeps the heap ordered after removals from the middle', async () => {
    const scheduler = new RenewalScheduler();
    const log: string[] = [];
    const now = performance.now();
    const tasks = Array.from({ length: 50 }, (_, index) => task(log, String(index)));
    // Scheduled in a scrambled order, due index*2 ms from now.
    for (const index of [...tasks.keys()].sort((a, b) => ((a * 37) % 50) - ((b * 37) % 50))) {
      scheduler.schedule(tasks[index], now + 5 + index * 2);
    }
    for (let index = 0; index < 50; index += 3) scheduler.remove(tasks[index]);
    await sleep(150);
    const expected = [...tasks.keys()].filter((index) => index % 3 !== 0).map(String);
    expect(log).toEqual(expected);
  });

  // Fake timers: on real ones a stall of the loaded machine before the first timer made the task due, and it
  // ran before the "not yet" check.
  it('rescheduling a task moves it rather than duplicating it', () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'performance'] });
    try {
      const scheduler = new RenewalScheduler();
      const log: string[] = [];
      const one = task(log, 'one');
      scheduler.schedule(one, performance.now() + 5);
      scheduler.schedule(one, performance.now() + 25);
      expect(scheduler.size).toBe(1);
      vi.advanceTimersByTime(15);
      expect(log).toEqual([]);
      vi.advanceTimersByTime(30);
      expect(log).toEqual(['one']);
      expect(scheduler.size).toBe(0);
    } finally {
      vi.useRealTimers();
    }
  });

  it('an earlier task scheduled after a later one still fires on time', async () => {
    const scheduler = new RenewalScheduler();
    const log: string[] = [];
    scheduler.schedule(task(log, 'late'), performance.now() + 10_000);
    scheduler.schedule(task(log, 'early'), performance.now() + 5);
    await sleep(40);
    expect(log).toEqual(['early']);
    scheduler.clear();
    expect(scheduler.size).toBe(0);
  });

  it('does not spin on a task due more than 24.8 days away (Node caps timer delays at 2^31 - 1 ms)', async () => {
    const scheduler = new RenewalScheduler();
    const log: string[] = [];
    const warnings: string[] = [];
    const onWarning = (warning: Error): void => void warnings.push(warning.name);
    process.on('warning', onWarning);
    const realSetTimeout = globalThis.setTimeout;
    let armed = 0;
    globalThis.setTimeout = ((...args: Parameters<typeof setTimeout>) => {
      armed++;
      return realSetTimeout(...args);
    }) as typeof setTimeout;
    try {
      const thirtyDays = 30 * 24 * 60 * 60 * 1000;
      scheduler.schedule(task(log, 'far'), performance.now() + thirtyDays);
      await new Promise((resolve) => realSetTimeout(resolve, 200));
    } finally {
      globalThis.setTimeout = realSetTimeout;
      process.off('warning', onWarning);
      scheduler.clear();
    }
    // Before the fix the timer fired every ms and re-armed: ~200 timers in 200 ms, and a TimeoutOverflowWarning.
    expect(armed).toBeLessThanOrEqual(2);
    expect(log).toEqual([]);
    expect(warnings).not.toContain('TimeoutOverflowWarning');
  });
});
