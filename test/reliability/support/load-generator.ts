/**
 * autocannon, driven programmatically with a small typed surface (the package ships no types). Every
 * request is built by `next()` and its answer handed to `answered()`, one request in flight per connection.
 */

export interface LoadRequest {
  readonly method: 'POST' | 'GET';
  readonly path: string;
  readonly body?: object;
}

export interface LoadPlan {
  /** `http://127.0.0.1:<port>`: loopback only. */
  readonly url: string;
  /** Exactly this many requests are sent. */
  readonly requests: number;
  readonly connections: number;
  /** Builds the next request. */
  next(): LoadRequest;
  /** Called with the status of each answer and the request it answers. */
  answered?(status: number, request: LoadRequest): void;
}

export interface LoadResult {
  readonly sent: number;
  /** Answers by HTTP status. */
  readonly statuses: Readonly<Record<string, number>>;
  /** Connection errors and timeouts (no HTTP answer). */
  readonly errors: number;
  readonly timeouts: number;
  readonly p50: number;
  readonly p99: number;
  readonly max: number;
  readonly requestsPerSecond: number;
  readonly durationMs: number;
}

interface AutocannonRequest {
  method: string;
  path: string;
  headers: Record<string, string>;
  body?: string;
  setupRequest(request: AutocannonRequest, context: Record<string, unknown>): AutocannonRequest;
  onResponse(status: number, body: string, context: Record<string, unknown>): void;
}

interface AutocannonResult {
  requests: { sent: number; average: number };
  statusCodeStats: Record<string, { count: number }>;
  errors: number;
  timeouts: number;
  latency: { p50: number; p99: number; max: number };
  duration: number;
}

type Autocannon = (options: Record<string, unknown>) => Promise<AutocannonResult> & { stop(): void };

// eslint-disable-next-line @typescript-eslint/no-require-imports
const autocannon = require('autocannon') as Autocannon;

/** Per-request timeout; the whole run is also bounded by the caller. */
const REQUEST_TIMEOUT_S = 10;

export async function runLoad(plan: LoadPlan): Promise<LoadResult> {
  const request: AutocannonRequest = {
    method: 'POST',
    path: '/',
    headers: { 'content-type': 'application/json' },
    setupRequest: (built, context) => {
      const next = plan.next();
      context.request = next;
      return {
        ...built,
        method: next.method,
        path: next.path,
        body: next.body === undefined ? undefined : JSON.stringify(next.body),
      };
    },
    onResponse: (status, _body, context) => plan.answered?.(status, context.request as LoadRequest),
  };
  const startedAt = performance.now();
  const result = await autocannon({
    url: plan.url,
    connections: plan.connections,
    amount: plan.requests,
    timeout: REQUEST_TIMEOUT_S,
    requests: [request],
  });
  const statuses: Record<string, number> = {};
  for (const [status, { count }] of Object.entries(result.statusCodeStats)) statuses[status] = count;
  return {
    sent: result.requests.sent,
    statuses,
    errors: result.errors,
    timeouts: result.timeouts,
    p50: result.latency.p50,
    p99: result.latency.p99,
    max: result.latency.max,
    requestsPerSecond: result.requests.average,
    durationMs: performance.now() - startedAt,
  };
}
