import { metrics, trace } from '@opentelemetry/api';
import {
  type DataPoint,
  type Histogram,
  MeterProvider,
  MetricReader,
  type MetricData,
} from '@opentelemetry/sdk-metrics';
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  type ReadableSpan,
  SimpleSpanProcessor,
} from '@opentelemetry/sdk-trace-base';

/** A reader collected on demand (no timer): the test asks for the metrics when it wants to check them. */
class OnDemandReader extends MetricReader {
  protected async onShutdown(): Promise<void> {}
  protected async onForceFlush(): Promise<void> {}
}

/** The real OpenTelemetry SDK, registered as the global meter and tracer providers for one test. */
export interface OtelCapture {
  /** Every metric recorded so far, by name. */
  metrics(): Promise<Map<string, MetricData>>;
  /** Spans ended so far. */
  spans(): ReadableSpan[];
  /** Unregisters the providers (the API falls back to its no-ops) and shuts them down. */
  stop(): Promise<void>;
}

export function captureOtel(): OtelCapture {
  const reader = new OnDemandReader();
  const meterProvider = new MeterProvider({ readers: [reader] });
  const exporter = new InMemorySpanExporter();
  const tracerProvider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
  if (!metrics.setGlobalMeterProvider(meterProvider) || !trace.setGlobalTracerProvider(tracerProvider)) {
    throw new Error('an OpenTelemetry provider was already registered: a previous test did not stop its capture');
  }
  return {
    metrics: async () => {
      const { resourceMetrics } = await reader.collect();
      const byName = new Map<string, MetricData>();
      for (const scope of resourceMetrics.scopeMetrics)
        for (const metric of scope.metrics) byName.set(metric.descriptor.name, metric);
      return byName;
    },
    spans: () => exporter.getFinishedSpans(),
    stop: async () => {
      metrics.disable();
      trace.disable();
      await Promise.all([meterProvider.shutdown(), tracerProvider.shutdown()]);
    },
  };
}

/** The value of a counter's data point whose attributes include `attributes` (0 when there is none). */
export function sumWhere(metric: MetricData | undefined, attributes: Record<string, string>): number {
  return pointsWhere(metric, attributes).reduce((sum, point) => sum + (point.value as number), 0);
}

/** The histogram data points whose attributes include `attributes`. */
export function histogramWhere(metric: MetricData | undefined, attributes: Record<string, string>): Histogram[] {
  return pointsWhere(metric, attributes).map((point) => point.value as Histogram);
}

function pointsWhere(metric: MetricData | undefined, attributes: Record<string, string>): DataPoint<unknown>[] {
  if (!metric) return [];
  return (metric.dataPoints as DataPoint<unknown>[]).filter((point) =>
    Object.entries(attributes).every(([name, value]) => point.attributes[name] === value),
  );
}
