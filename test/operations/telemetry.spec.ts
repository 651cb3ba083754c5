import { Injectable } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { ConsoleLogger } from '@nestjs/common';
import { LOCK_METRICS, LOCK_WAIT_SPAN, LockModule, LockService, Locked } from '../../lib';
import { eventually } from '../support/eventually';
import { connected, trackLockApps, uniqueKey } from '../support/lock-app';
import { startRedis, type RedisProcess } from '../support/redis-server';
import { captureOtel, histogramWhere, sumWhere, type OtelCapture } from './helpers/otel-capture';

const TTL_MS = 900;

@Injectable()
class ReportJob {
  runs = 0;

  @Locked('report:{0}', { wait: 0, onBusy: 'skip' })
  async run(_day: string): Promise<void> {
    this.runs++;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/**
 * Metrics and spans through the real OpenTelemetry SDK (in-memory reader and span exporter registered as
 * the global providers before the application starts, as an application's tracing bootstrap does).
 */
describe('OpenTelemetry metrics and spans (redis store)', () => {
  let redis: RedisProcess;
  let otel: OtelCapture;
  beforeAll(async () => {
    redis = await startRedis();
  });
  afterAll(() => redis?.stop());
  beforeEach(() => {
    otel = captureOtel();
  });
  afterEach(async () => {
    await otel.stop();
  });
  const apps = trackLockApps();

  it('counts acquisitions by outcome, times waits and holds, counts locks held and lost, spans a wait', async () => {
    const { locks } = await apps.start({ redis: redis.url, instance: 'a', ttl: TTL_MS });
    const other = await apps.start({ redis: redis.url, instance: 'b', ttl: TTL_MS });
    await Promise.all([connected(locks), connected(other.locks)]);
    const key = uniqueKey('invoice');
    const label = { label: 'invoice' };

    // Acquired at once, then busy (tryAcquire), then acquired after waiting for another instance.
    const first = await locks.acquire(key, label);
    expect(await locks.tryAcquire(key, label)).toBeNull();
    await first.release();
    const elsewhere = await other.locks.acquire(key);
    setTimeout(() => void elsewhere.release(), 120);
    const waited = await locks.acquire(key, { ...label, wait: 5_000 });
    // Still held when the metrics are read: one lock held.
    let recorded = await otel.metrics();
    const invoice = { 'lock.name': 'invoice', 'lock.store': 'redis' };
    expect(sumWhere(recorded.get(LOCK_METRICS.held), invoice)).toBe(1);
    // Lost: another instance force-releases it; the holder finds out at its next renewal.
    await other.locks.forceRelease(key);
    await eventually(async () => waited.signal.aborted, TTL_MS * 2, 'the lock is lost');

    recorded = await otel.metrics();
    expect(sumWhere(recorded.get(LOCK_METRICS.acquisitions), { ...invoice, 'lock.outcome': 'acquired' })).toBe(2);
    expect(sumWhere(recorded.get(LOCK_METRICS.acquisitions), { ...invoice, 'lock.outcome': 'busy' })).toBe(1);
    const [waits] = histogramWhere(recorded.get(LOCK_METRICS.waitDuration), { ...invoice, 'lock.outcome': 'acquired' });
    expect(waits.count).toBe(2);
    expect(waits.max).toBeGreaterThanOrEqual(100);
    expect(
      histogramWhere(recorded.get(LOCK_METRICS.holdDuration), { ...invoice, 'lock.outcome': 'released' })[0].count,
    ).toBe(1);
    expect(
      histogramWhere(recorded.get(LOCK_METRICS.holdDuration), { ...invoice, 'lock.outcome': 'lost' })[0].count,
    ).toBe(1);
    expect(sumWhere(recorded.get(LOCK_METRICS.held), invoice)).toBe(0);
    expect(sumWhere(recorded.get(LOCK_METRICS.lost), invoice)).toBe(1);
    // Without a label: 'unlabelled', never the rendered key.
    expect(
      sumWhere(recorded.get(LOCK_METRICS.acquisitions), { 'lock.name': 'unlabelled', 'lock.outcome': 'acquired' }),
    ).toBe(1);
    for (const metric of recorded.values()) {
      for (const point of metric.dataPoints) expect(Object.values(point.attributes)).not.toContain(key);
    }
    expect(recorded.get(LOCK_METRICS.holdDuration)?.descriptor.unit).toBe('ms');

    // One span: the acquisition that waited (the others answered at once).
    const spans = otel.spans().filter((span) => span.name === LOCK_WAIT_SPAN);
    expect(spans).toHaveLength(1);
    expect(spans[0].attributes).toMatchObject({ ...invoice, 'lock.outcome': 'acquired' });
    expect(spans[0].duration[0] * 1e3 + spans[0].duration[1] / 1e6).toBeGreaterThanOrEqual(100);
  });

  it("names a @Locked method's locks by its key template", async () => {
    const module = await Test.createTestingModule({
      imports: [LockModule.forRoot({ redis: redis.url, instance: 'jobs' })],
      providers: [ReportJob],
    })
      .setLogger(new ConsoleLogger({ logLevels: ['error'] }))
      .compile();
    await module.init();
    try {
      const job = module.get(ReportJob);
      await Promise.all([job.run('2026-11-01'), job.run('2026-11-01'), job.run('2026-11-02')]);
      expect(job.runs).toBe(2);
      const recorded = await otel.metrics();
      const template = { 'lock.name': 'report:{0}', 'lock.store': 'redis' };
      expect(sumWhere(recorded.get(LOCK_METRICS.acquisitions), { ...template, 'lock.outcome': 'acquired' })).toBe(2);
      expect(sumWhere(recorded.get(LOCK_METRICS.acquisitions), { ...template, 'lock.outcome': 'busy' })).toBe(1);
      expect(module.get(LockService)).toBeDefined();
    } finally {
      await module.close();
    }
  });
});
