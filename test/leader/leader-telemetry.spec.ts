import { LOCK_METRICS } from '../../lib';
import { captureOtel, histogramWhere, sumWhere, type OtelCapture } from '../operations/helpers/otel-capture';
import { eventually } from '../support/eventually';
import { trackLockApps, uniqueKey } from '../support/lock-app';

/** Leadership metrics through the real OpenTelemetry SDK, on the in-process store (the metrics are the engine's). */
describe('leader election: OpenTelemetry metrics', () => {
  let otel: OtelCapture;
  beforeEach(() => {
    otel = captureOtel();
  });
  afterEach(async () => {
    await otel.stop();
  });
  const apps = trackLockApps();

  it('counts terms, the leaderships held now, and times each term by how it ended', async () => {
    const { locks } = await apps.start({});
    const name = uniqueKey('metered');
    let terms = 0;
    const leadership = locks.lead(
      name,
      async (term) => {
        terms++;
        // The first term resigns after a while; the second runs until stopped.
        if (terms === 1) await new Promise((resolve) => setTimeout(resolve, 50));
        else await new Promise((resolve) => term.signal.addEventListener('abort', resolve, { once: true }));
      },
      { ttl: 1_000 },
    );
    await eventually(async () => terms === 2 && leadership.isLeader, 5_000, 'the second term');
    const attributes = { 'lock.name': `leader:${name}`, 'lock.store': 'memory' };
    let recorded = await otel.metrics();
    expect(sumWhere(recorded.get(LOCK_METRICS.leaderTerms), attributes)).toBe(2);
    expect(sumWhere(recorded.get(LOCK_METRICS.leading), attributes)).toBe(1);
    const resigned = histogramWhere(recorded.get(LOCK_METRICS.leaderDuration), {
      ...attributes,
      'lock.outcome': 'resigned',
    });
    expect(resigned.map((histogram) => histogram.count)).toEqual([1]);
    expect(resigned[0].min).toBeGreaterThanOrEqual(40);

    await leadership.stop();
    recorded = await otel.metrics();
    expect(sumWhere(recorded.get(LOCK_METRICS.leading), attributes)).toBe(0);
    const durations = histogramWhere(recorded.get(LOCK_METRICS.leaderDuration), {
      ...attributes,
      'lock.outcome': 'resigned',
    });
    expect(durations.map((histogram) => histogram.count)).toEqual([2]);
  });
});
