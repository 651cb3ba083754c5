/**
 * The few parts of `@opentelemetry/api` (1.x) the library uses, written out structurally so that no file of
 * the library, nor its published typings, refers to the package: it is an optional peer, absent from most
 * installs. The real module is loaded at run time by optional-peer.ts and used through these types.
 */
export type OtelAttributes = Readonly<Record<string, string | number | boolean>>;

export interface OtelInstrumentOptions {
  readonly description?: string;
  readonly unit?: string;
  readonly advice?: { readonly explicitBucketBoundaries?: number[] };
}

export interface OtelCounter {
  add(value: number, attributes?: OtelAttributes): void;
}

export interface OtelHistogram {
  record(value: number, attributes?: OtelAttributes): void;
}

export interface OtelMeter {
  createCounter(name: string, options?: OtelInstrumentOptions): OtelCounter;
  createUpDownCounter(name: string, options?: OtelInstrumentOptions): OtelCounter;
  createHistogram(name: string, options?: OtelInstrumentOptions): OtelHistogram;
}

export interface OtelSpan {
  setAttribute(key: string, value: string | number | boolean): unknown;
  setStatus(status: { code: number; message?: string }): unknown;
  end(endTime?: number): void;
}

export interface OtelTracer {
  /** `startTime` in ms since the epoch. The span's parent is the active context's span, if any. */
  startSpan(name: string, options?: { kind?: number; startTime?: number; attributes?: OtelAttributes }): OtelSpan;
}

export interface OtelApi {
  readonly metrics: { getMeter(name: string, version?: string): OtelMeter };
  readonly trace: { getTracer(name: string, version?: string): OtelTracer };
  readonly SpanStatusCode: { readonly ERROR: number };
  readonly SpanKind: { readonly INTERNAL: number };
}
