import { Subscription } from 'rxjs';
import { type LockEvent, LockUnavailableError } from '../../lib';
import { within } from '../support/deadlines';
import { eventually } from '../support/eventually';
import { connected, trackLockApps, uniqueKey } from '../support/lock-app';
import { startRedis, type RedisProcess } from '../support/redis-server';
import { waiterAsleep } from '../support/waiters';

const TTL_MS = 900;

/** `LockService.events` on one real Redis: what an operator's dashboard or log shipper would see. */
describe('LockService.events (redis store)', () => {
  let redis: RedisProcess;
  beforeAll(async () => {
    redis = await startRedis();
  });
  afterAll(() => redis?.stop());
  const apps = trackLockApps();
  let subscription: Subscription | undefined;
  afterEach(() => subscription?.unsubscribe());

  function record(events: LockEvent[]) {
    return (event: LockEvent) => events.push(event);
  }

  it('acquired, busy, released, lost, in the order they happened, with instance, waits and holds', async () => {
    const { locks } = await apps.start({ redis: redis.url, instance: 'worker-1', ttl: TTL_MS });
    const operator = await apps.start({ redis: redis.url, instance: 'ops' });
    await connected(locks);
    const events: LockEvent[] = [];
    subscription = locks.events.subscribe(record(events));
    const key = uniqueKey('events');

    const first = await locks.acquire(key, { label: 'events' });
    expect(await locks.tryAcquire(key, { label: 'events' })).toBeNull();
    await expect(locks.acquire(key, { wait: 150, label: 'events' })).rejects.toThrow(/not acquired/);
    await new Promise((resolve) => setTimeout(resolve, 50));
    await first.release();

    const second = await locks.acquire(key);
    await operator.locks.forceRelease(key);
    await eventually(async () => second.signal.aborted, TTL_MS * 2, 'the evicted lock is lost');

    expect(events.map((event) => event.type)).toEqual(['acquired', 'busy', 'busy', 'released', 'acquired', 'lost']);
    const [acquired, tried, waited, released, again, lost] = events;
    expect(acquired).toMatchObject({
      keys: [key],
      instance: 'worker-1',
      store: 'redis',
      label: 'events',
      fences: { [key]: first.fence },
    });
    expect(tried).toMatchObject({ type: 'busy', keys: [key] });
    expect(waited.type === 'busy' && waited.waitedMs).toBeGreaterThanOrEqual(140);
    expect(released.type === 'released' && released.heldMs).toBeGreaterThanOrEqual(190);
    // No label: the rendered key is never used in its place.
    expect(again).not.toHaveProperty('label');
    expect(lost).toMatchObject({ type: 'lost', keys: [key], reason: expect.stringMatching(/gone|expired|taken/) });
    expect(events.every((event) => event.instance === 'worker-1')).toBe(true);
    // Released after it was lost (as withLock and @Locked always do): not reported a second time.
    expect(await second.release()).toBe(false);
    expect(events.map((event) => event.type)).toEqual(['acquired', 'busy', 'busy', 'released', 'acquired', 'lost']);
  });

  it('a lock lost inside withLock is reported lost once, a lock held at shutdown once, and its refused waiter as unavailable (shutting down)', async () => {
    const app = await apps.start({ redis: redis.url, instance: 'worker-2', ttl: TTL_MS });
    await connected(app.locks);
    const events: LockEvent[] = [];
    subscription = app.locks.events.subscribe(record(events));
    const [evicted, heldAtShutdown] = [uniqueKey('evicted'), uniqueKey('at-shutdown')];
    await app.locks.withLock(evicted, async (lock) => {
      await app.locks.forceRelease(evicted);
      expect(lock.signal.aborted).toBe(true);
    });
    await app.locks.acquire(heldAtShutdown);
    const waiter = app.locks.acquire(heldAtShutdown, { wait: 10_000 }).catch((error: unknown) => error);
    await waiterAsleep(app.locks, heldAtShutdown);
    await app.close();
    expect(await waiter).toBeInstanceOf(LockUnavailableError);
    // The waiter refused by the shutdown: an 'unavailable' whose reason says why, to filter as the README says.
    expect(events.filter((event) => event.type === 'unavailable')).toEqual([
      expect.objectContaining({
        keys: [heldAtShutdown],
        reason: expect.stringContaining('the application is shutting down'),
      }),
    ]);
    // Before: lost twice each (once when lost, once more when released), so lock.lost counted 2 and the
    // lock.held gauge went down by 2 for each.
    expect(
      events.filter((event) => event.type !== 'unavailable').map((event) => `${event.type}:${event.keys.join(',')}`),
    ).toEqual([`acquired:${evicted}`, `lost:${evicted}`, `acquired:${heldAtShutdown}`, `lost:${heldAtShutdown}`]);
  });

  it('unavailable when Redis does not answer; the stream never errors, and completes at shutdown', async () => {
    const app = await apps.start({ redis: redis.url, instance: 'worker-2', ttl: TTL_MS });
    const events: LockEvent[] = [];
    let completed = false;
    let errored = false;
    subscription = app.locks.events.subscribe({
      next: record(events),
      error: () => (errored = true),
      complete: () => (completed = true),
    });

    redis.pause();
    try {
      await expect(app.locks.acquire(uniqueKey('down'), { wait: 0 })).rejects.toThrow(/unavailable|failed/i);
    } finally {
      redis.resume();
    }
    expect(events).toEqual([
      expect.objectContaining({ type: 'unavailable', instance: 'worker-2', reason: expect.any(String) }),
    ]);

    await within(app.close(), 5_000, 'shutdown');
    expect(completed).toBe(true);
    expect(errored).toBe(false);
  });
});
