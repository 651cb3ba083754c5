import { firstValueFrom, take, toArray } from 'rxjs';
import { captureOtel, histogramWhere, sumWhere, type OtelCapture } from '../../test/operations/helpers/otel-capture';
import { LockNotAcquiredError, LockUnavailableError } from '../errors';
import type { LockEvent } from './lock-event';
import { LockObserver } from './lock-observer';
import { LOCK_METRICS, LOCK_WAIT_SPAN } from './lock-telemetry';
import { loadOptionalPeer } from '../util/optional-peer';

describe('LockObserver', () => {
  describe('events', () => {
    it('are emitted to subscribers only, in order, and the stream completes on shutdown', async () => {
      const observer = new LockObserver('host-a:1', 'redis');
      // Before anyone subscribes: nothing is kept for later (hot).
      observer.acquired(['early'], [1], undefined, performance.now(), undefined);

      const seen = firstValueFrom(observer.events.pipe(toArray()));
      const startedAt = performance.now();
      observer.acquired(['k'], [7], 'job', startedAt, undefined);
      observer.notAcquired(['k'], 'job', startedAt, new LockNotAcquiredError(['k'], 10, 5), undefined);
      observer.notAcquired(['k'], 'job', startedAt, null, undefined);
      observer.notAcquired(['k'], undefined, startedAt, new LockUnavailableError(['k'], 'down'), undefined);
      observer.ended(['k'], 'job', startedAt, undefined);
      observer.ended(['k'], 'job', startedAt, 'it was force-released');
      // Cancelled and unexpected failures are not lock events.
      const aborted = new AbortController();
      aborted.abort();
      observer.notAcquired(['k'], 'job', startedAt, aborted.signal.reason, undefined, aborted.signal);
      observer.notAcquired(['k'], 'job', startedAt, new TypeError('bug'), undefined);
      observer.complete();

      const events = await seen;
      expect(events.map((event) => event.type)).toEqual([
        'acquired',
        'busy',
        'busy',
        'unavailable',
        'released',
        'lost',
      ]);
      expect(events[0]).toMatchObject({
        keys: ['k'],
        instance: 'host-a:1',
        store: 'redis',
        label: 'job',
        fences: { k: 7 },
      });
      expect(events[3]).not.toHaveProperty('label');
      expect(events[3]).toMatchObject({ reason: expect.stringContaining('down') });
      expect(events[5]).toMatchObject({ reason: 'it was force-released' });
      for (const event of events) {
        expect(event.at).toBeGreaterThan(Date.now() - 60_000);
        if ('waitedMs' in event) expect(event.waitedMs).toBeGreaterThanOrEqual(0);
        if ('heldMs' in event) expect(event.heldMs).toBeGreaterThanOrEqual(0);
      }
    });

    it('keeps delivering to the other subscribers when one handler throws', async () => {
      const observer = new LockObserver('i', 'memory');
      const failures: unknown[] = [];
      const onUnhandled = (error: unknown) => failures.push(error);
      process.on('uncaughtException', onUnhandled);
      try {
        observer.events.subscribe(() => {
          throw new Error('a broken subscriber');
        });
        const next = firstValueFrom(observer.events.pipe(take(2), toArray()));
        observer.acquired(['a'], [1], undefined, performance.now(), undefined);
        observer.ended(['a'], undefined, performance.now(), undefined);
        const events: LockEvent[] = await next;
        expect(events.map((event) => event.type)).toEqual(['acquired', 'released']);
        // rxjs reports the throw asynchronously; it never reached the emitting lock operation.
        await new Promise((resolve) => setTimeout(resolve, 10));
      } finally {
        process.off('uncaughtException', onUnhandled);
      }
      expect(failures.length).toBeGreaterThan(0);
    });
  });

  describe('OpenTelemetry, through the real SDK', () => {
    let otel: OtelCapture;
    beforeEach(() => {
      otel = captureOtel();
    });
    afterEach(async () => {
      await otel.stop();
    });

    it('counts acquisitions by outcome, times waits and holds, tracks locks held and lost', async () => {
      const observer = new LockObserver('i', 'redis');
      const startedAt = performance.now() - 40;
      observer.acquired(['order:1'], [1], 'order:{params.id}', startedAt, undefined);
      observer.acquired(['order:2'], [2], 'order:{params.id}', startedAt, undefined);
      observer.notAcquired(['order:1'], 'order:{params.id}', startedAt, null, undefined);
      observer.notAcquired(['x'], undefined, startedAt, new LockUnavailableError(['x'], 'down'), undefined);
      observer.ended(['order:1'], 'order:{params.id}', startedAt, undefined);
      observer.ended(['order:2'], 'order:{params.id}', startedAt, 'lost it');

      const recorded = await otel.metrics();
      const name = { 'lock.name': 'order:{params.id}', 'lock.store': 'redis' };
      expect(sumWhere(recorded.get(LOCK_METRICS.acquisitions), { ...name, 'lock.outcome': 'acquired' })).toBe(2);
      expect(sumWhere(recorded.get(LOCK_METRICS.acquisitions), { ...name, 'lock.outcome': 'busy' })).toBe(1);
      expect(
        sumWhere(recorded.get(LOCK_METRICS.acquisitions), { 'lock.name': 'unlabelled', 'lock.outcome': 'unavailable' }),
      ).toBe(1);
      const [waits] = histogramWhere(recorded.get(LOCK_METRICS.waitDuration), { ...name, 'lock.outcome': 'acquired' });
      expect(waits.count).toBe(2);
      expect(waits.min).toBeGreaterThanOrEqual(40);
      expect(recorded.get(LOCK_METRICS.waitDuration)?.descriptor.unit).toBe('ms');
      expect(
        histogramWhere(recorded.get(LOCK_METRICS.holdDuration), { ...name, 'lock.outcome': 'lost' })[0].count,
      ).toBe(1);
      expect(sumWhere(recorded.get(LOCK_METRICS.held), name)).toBe(0);
      expect(sumWhere(recorded.get(LOCK_METRICS.lost), name)).toBe(1);
      // Never the rendered key.
      const attributeValues = [...recorded.values()].flatMap((metric) =>
        metric.dataPoints.flatMap((point) => Object.values(point.attributes)),
      );
      expect(attributeValues).not.toContain('order:1');
    });

    it('spans an acquisition that waited, from the call to its outcome', () => {
      const observer = new LockObserver('i', 'redlock');
      const startedAt = performance.now() - 25;
      const span = observer.waiting('report', startedAt, 1);
      observer.acquired(['report:2026'], [3], 'report', startedAt, span);
      const failed = observer.waiting(undefined, startedAt, 2);
      observer.notAcquired(['a', 'b'], undefined, startedAt, new LockUnavailableError(['a', 'b'], 'no quorum'), failed);

      const [waited, unavailable] = otel.spans();
      expect(waited.name).toBe(LOCK_WAIT_SPAN);
      expect(waited.attributes).toMatchObject({
        'lock.name': 'report',
        'lock.store': 'redlock',
        'lock.outcome': 'acquired',
      });
      const durationMs = waited.duration[0] * 1e3 + waited.duration[1] / 1e6;
      expect(durationMs).toBeGreaterThanOrEqual(24);
      expect(unavailable.attributes).toMatchObject({ 'lock.outcome': 'unavailable', 'lock.key_count': 2 });
      expect(unavailable.status.code).toBe(2); // ERROR
    });
  });

  it('finds an optional peer that is installed, and says why one is not', () => {
    expect(loadOptionalPeer<{ trace: unknown }>('@opentelemetry/api')).toMatchObject({
      loaded: true,
      module: { trace: expect.anything() },
    });
    expect(loadOptionalPeer('@nestjs-redis-lock/not-a-package')).toEqual({
      loaded: false,
      reason: '@nestjs-redis-lock/not-a-package is not installed',
    });
  });
});
