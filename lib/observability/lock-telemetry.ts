// The lock metrics and wait spans: their names and attributes, and their recording through the OpenTelemetry API.
import type { OtelApi, OtelAttributes, OtelCounter, OtelHistogram, OtelSpan, OtelTracer } from './otel-api';
import { safeMessage } from '../errors/safe-cause';

/** The instrumentation scope (meter and tracer name) of every metric and span below. */
export const LOCK_INSTRUMENTATION_SCOPE = 'nestjs-redis-lock';

/**
 * Metric and span names (docs/operations.md). Durations are in milliseconds, as OpenTelemetry's other Node
 * instrumentations report them.
 */
export const LOCK_METRICS = {
  /** Counter, `{acquisition}`: acquisitions by `lock.outcome` (acquired, busy, unavailable, cancelled, error). */
  acquisitions: 'lock.acquisitions',
  /** Histogram, `ms`: from the call to its outcome, by `lock.outcome`. */
  waitDuration: 'lock.wait.duration',
  /** Histogram, `ms`: from the grant to its end, by `lock.outcome` (released, lost). */
  holdDuration: 'lock.hold.duration',
  /** UpDownCounter, `{lock}`: grants held now by this process. */
  held: 'lock.held',
  /** Counter, `{lock}`: grants lost before their release. */
  lost: 'lock.lost',
  /** Counter, `{term}`: terms of office this process began, by `lock.name` (`leader:<name>`). */
  leaderTerms: 'lock.leader.terms',
  /**
   * Histogram, `ms`: time as leader, from the election to the end of the term, by `lock.outcome` (lost, resigned,
   * shutdown).
   */
  leaderDuration: 'lock.leader.duration',
  /** UpDownCounter, `{term}`: leaderships this process holds now. */
  leading: 'lock.leader.leading',
} as const;

/** The span around an acquisition that had to wait. */
export const LOCK_WAIT_SPAN = 'lock.acquire';

/** Attribute names. The rendered key is never one of them: it would make a time series per key. */
export const LOCK_ATTRIBUTES = {
  /** The call's `label`, or a @Locked method's key template; `unlabelled` otherwise. */
  name: 'lock.name',
  /** memory, redis or redlock. */
  store: 'lock.store',
  outcome: 'lock.outcome',
} as const;

export type AcquireOutcomeName = 'acquired' | 'busy' | 'unavailable' | 'cancelled' | 'error';
export type HoldOutcomeName = 'released' | 'lost';
/** How a term of office ended (LeaderDeposedReason). */
export type TermOutcomeName = 'lost' | 'resigned' | 'shutdown';

/** What the name attribute says when a call has neither a label nor a template. */
export const UNLABELLED = 'unlabelled';

/** Wait and hold times of locks span from a fraction of a millisecond to minutes. */
const DURATION_BUCKETS_MS = [
  0, 1, 2, 5, 10, 25, 50, 100, 250, 500, 1_000, 2_500, 5_000, 10_000, 30_000, 60_000, 300_000,
];

/** Labels kept with their attribute objects; past this many, attributes are built per call (no growth). */
const MAX_CACHED_LABELS = 1_000;

/** The attribute objects of one label, made once: recording allocates nothing. */
class LabelAttributes {
  readonly base: OtelAttributes;
  private readonly byOutcome = new Map<string, OtelAttributes>();

  constructor(name: string, store: string) {
    this.base = { [LOCK_ATTRIBUTES.name]: name, [LOCK_ATTRIBUTES.store]: store };
  }

  with(outcome: AcquireOutcomeName | HoldOutcomeName | TermOutcomeName): OtelAttributes {
    let attributes = this.byOutcome.get(outcome);
    if (!attributes) {
      attributes = { ...this.base, [LOCK_ATTRIBUTES.outcome]: outcome };
      this.byOutcome.set(outcome, attributes);
    }
    return attributes;
  }
}

/**
 * Records the lock metrics and wait spans through the OpenTelemetry API. With the API installed but no SDK
 * registered, every instrument is the API's no-op: a few empty calls per lock. Instruments are made here,
 * when the service first locks something, so an SDK registered during bootstrap is the one recording.
 */
export class LockTelemetry {
  private readonly acquisitions: OtelCounter;
  private readonly waitDuration: OtelHistogram;
  private readonly holdDuration: OtelHistogram;
  private readonly held: OtelCounter;
  private readonly lostCount: OtelCounter;
  private readonly leaderTerms: OtelCounter;
  private readonly leaderDuration: OtelHistogram;
  private readonly leading: OtelCounter;
  private readonly tracer: OtelTracer;
  private readonly labels = new Map<string, LabelAttributes>();

  constructor(
    private readonly api: OtelApi,
    private readonly store: string,
  ) {
    const meter = api.metrics.getMeter(LOCK_INSTRUMENTATION_SCOPE);
    const durations = { unit: 'ms', advice: { explicitBucketBoundaries: DURATION_BUCKETS_MS } };
    this.acquisitions = meter.createCounter(LOCK_METRICS.acquisitions, {
      unit: '{acquisition}',
      description: 'Lock acquisitions, by outcome',
    });
    this.waitDuration = meter.createHistogram(LOCK_METRICS.waitDuration, {
      ...durations,
      description: 'Time from an acquisition call to its outcome',
    });
    this.holdDuration = meter.createHistogram(LOCK_METRICS.holdDuration, {
      ...durations,
      description: 'Time from a grant to its release or loss',
    });
    this.held = meter.createUpDownCounter(LOCK_METRICS.held, { unit: '{lock}', description: 'Locks held now' });
    this.lostCount = meter.createCounter(LOCK_METRICS.lost, {
      unit: '{lock}',
      description: 'Locks lost before release',
    });
    this.leaderTerms = meter.createCounter(LOCK_METRICS.leaderTerms, {
      unit: '{term}',
      description: 'Terms of office of a leadership begun by this process',
    });
    this.leaderDuration = meter.createHistogram(LOCK_METRICS.leaderDuration, {
      ...durations,
      description: 'Time as leader, from the election to the end of the term',
    });
    this.leading = meter.createUpDownCounter(LOCK_METRICS.leading, {
      unit: '{term}',
      description: 'Leaderships this process holds now',
    });
    this.tracer = api.trace.getTracer(LOCK_INSTRUMENTATION_SCOPE);
  }

  /** A term of office began; `label` is the leadership's key. */
  elected(label: string): void {
    const attributes = this.attributes(label).base;
    this.leaderTerms.add(1, attributes);
    this.leading.add(1, attributes);
  }

  deposed(label: string, outcome: TermOutcomeName, ledMs: number): void {
    const attributes = this.attributes(label);
    this.leading.add(-1, attributes.base);
    this.leaderDuration.record(ledMs, attributes.with(outcome));
  }

  /** One acquisition call ended. */
  acquisition(label: string | undefined, outcome: AcquireOutcomeName, waitedMs: number): void {
    const attributes = this.attributes(label).with(outcome);
    this.acquisitions.add(1, attributes);
    this.waitDuration.record(waitedMs, attributes);
  }

  granted(label: string | undefined): void {
    this.held.add(1, this.attributes(label).base);
  }

  ended(label: string | undefined, outcome: HoldOutcomeName, heldMs: number): void {
    const attributes = this.attributes(label);
    this.held.add(-1, attributes.base);
    this.holdDuration.record(heldMs, attributes.with(outcome));
    if (outcome === 'lost') this.lostCount.add(1, attributes.base);
  }

  /** Starts the span of an acquisition that has to wait, back-dated to the call (`startedAt`: performance.now()). */
  waitSpan(label: string | undefined, startedAt: number, keyCount: number): OtelSpan {
    return this.tracer.startSpan(LOCK_WAIT_SPAN, {
      kind: this.api.SpanKind.INTERNAL,
      startTime: performance.timeOrigin + startedAt,
      attributes: { ...this.attributes(label).base, 'lock.key_count': keyCount },
    });
  }

  endWaitSpan(span: OtelSpan, outcome: AcquireOutcomeName, error?: Error): void {
    span.setAttribute(LOCK_ATTRIBUTES.outcome, outcome);
    // Busy is an answer, not a failure of the lock service; unreachable and unexpected errors are.
    if (error && outcome !== 'busy' && outcome !== 'cancelled') {
      span.setStatus({ code: this.api.SpanStatusCode.ERROR, message: safeMessage(error) });
    }
    span.end();
  }

  private attributes(label: string | undefined): LabelAttributes {
    const name = label ?? UNLABELLED;
    let attributes = this.labels.get(name);
    if (!attributes) {
      attributes = new LabelAttributes(name, this.store);
      if (this.labels.size < MAX_CACHED_LABELS) this.labels.set(name, attributes);
    }
    return attributes;
  }
}
