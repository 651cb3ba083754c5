// Notices an HTTP client that left while its @Locked request waited, and the 499 exception that request ends with.
import { HttpException, type ExecutionContext } from '@nestjs/common';
import { noop } from '../util/noop';

/** What this file uses of Node's response and request streams (and of a socket): a 'close' event, `destroyed`. */
interface Closable {
  once(event: 'close', listener: () => void): unknown;
  off(event: 'close', listener: () => void): unknown;
  readonly destroyed?: boolean;
}

function isClosable(value: unknown): value is Closable {
  const candidate = value as Partial<Closable> | null | undefined;
  return typeof candidate?.once === 'function' && typeof candidate.off === 'function';
}

/** Fastify wraps Node's request and response (`.raw`); Express extends them. */
function rawOf(value: unknown): unknown {
  return (value as { raw?: unknown } | undefined)?.raw ?? value;
}

/**
 * Calls `gone` once if the HTTP client of `context` disconnects while watched, or at once when its connection is
 * already closed: LockInterceptor watches from the first attempt until the lock is taken, so that a @Locked
 * request waiting for its key stops waiting (Nest keeps running a request whose client left, which would
 * otherwise take the lock and run the handler for nobody, holding off the clients still there). Returns the
 * function that stops watching.
 *
 * The response's 'close' while watched means the client left: an HTTP route has written nothing yet (an HTTP/2
 * stream reports itself finished once reset, so finished-or-not cannot be asked). On HTTP/1.1 the socket is
 * watched too: a request pipelined behind another on its connection gets no 'close' of its own response when the
 * connection drops. Not the request's own 'close': on Node 20 it fires as soon as the body is read.
 *
 * A GraphQL operation over HTTP is watched alike, each of its @Locked fields on its own. Its response may end
 * while a field still waits only when it can no longer carry that field's result (graphql-js answers at once when
 * a non-null sibling fails): stopping that wait then is right too, although the client did not leave. Other
 * transports have no such signal here (an SSE client or a WebSocket client, an Observable's subscriber, is
 * handled by its unsubscription).
 */
export function watchHttpClientGone(context: ExecutionContext, gone: () => void): () => void {
  const exchange = httpExchangeOf(context);
  if (!exchange) return noop;
  const response = rawOf(exchange.response);
  const request = rawOf(exchange.request) as { httpVersionMajor?: number; socket?: unknown } | undefined;
  const socket = request?.httpVersionMajor === 1 ? request.socket : undefined;
  const watched = [response, socket].filter(isClosable);
  if (watched.length === 0) return noop;
  // Closed before watching began (a GraphQL mutation runs after the ones before it, the client may be gone by
  // then): its 'close' has been emitted already and will not come again.
  if (watched.some((emitter) => emitter.destroyed === true)) {
    gone();
    return noop;
  }
  let stopped = false;
  const stop = (): void => {
    if (stopped) return;
    stopped = true;
    for (const unwatch of unwatchers) unwatch();
  };
  const onClose = (): void => {
    // The socket's 'close' emits the response's first: the second call is not reported again.
    if (stopped) return;
    stop();
    gone();
  };
  const unwatchers = watched.map((emitter) => onceClosed(emitter, onClose));
  return stop;
}

/** The callers watching one response or socket, and the one 'close' listener they share. */
interface SharedWatch {
  readonly callers: Set<() => void>;
  readonly listener: () => void;
}

/**
 * One 'close' listener per emitter, however many callers watch it: the @Locked fields of one GraphQL request
 * share its response and socket, and a listener each made Node warn of a leak (MaxListenersExceededWarning)
 * on every request with eight such fields or more.
 */
const sharedWatches = new WeakMap<Closable, SharedWatch>();

/** Calls `onClose` when `emitter` closes; returns the function that stops that. */
function onceClosed(emitter: Closable, onClose: () => void): () => void {
  let watch = sharedWatches.get(emitter);
  if (!watch) {
    const callers = new Set<() => void>();
    const listener = (): void => {
      sharedWatches.delete(emitter);
      for (const caller of [...callers]) caller();
    };
    watch = { callers, listener };
    sharedWatches.set(emitter, watch);
    emitter.once('close', listener);
  }
  const { callers, listener } = watch;
  callers.add(onClose);
  return () => {
    callers.delete(onClose);
    if (callers.size > 0 || sharedWatches.get(emitter)?.listener !== listener) return;
    sharedWatches.delete(emitter);
    emitter.off('close', listener);
  };
}

/** What a GraphQL operation's context may hold of the HTTP exchange that carried it. */
interface GraphQLHttpContext {
  /** Nest's Apollo driver: the request (Express sets its `res`; on Fastify there is no response beside it). */
  readonly req?: { readonly res?: unknown };
  readonly res?: unknown;
  /** Fastify (Mercurius): the reply, whose `request` Fastify sets. */
  readonly reply?: { readonly request?: unknown };
}

/**
 * The request and response of an HTTP route, or of a GraphQL operation (from its context: `req` / `res` with
 * Apollo on Express, `req` alone with Apollo on Fastify, `reply` with Mercurius; a subscription's context may
 * hold its WebSocket's upgrade request, whose socket closing means the subscriber left); undefined for every
 * other transport, and for a GraphQL context built without them.
 */
function httpExchangeOf(
  context: ExecutionContext,
): { readonly request: unknown; readonly response: unknown } | undefined {
  const type: string = context.getType();
  if (type === 'http') {
    const http = context.switchToHttp();
    return { request: http.getRequest(), response: http.getResponse() };
  }
  if (type !== 'graphql') return undefined;
  const graphqlContext = context.getArgByIndex<GraphQLHttpContext | undefined>(2);
  const response = graphqlContext?.res ?? graphqlContext?.req?.res ?? graphqlContext?.reply;
  const request = graphqlContext?.req ?? graphqlContext?.reply?.request;
  // Apollo on Fastify puts the request alone in the context: its socket is watched (HTTP/1.1).
  return response === undefined && request === undefined ? undefined : { request, response };
}

/** Not among Nest's HttpStatus values; nginx's code for a client that closed the connection first. */
const CLIENT_CLOSED_REQUEST = 499;

/**
 * How a @Locked request whose client left while it waited ends: status 499 ("client closed request", as
 * nginx logs it). An HttpException, so Nest's exception filters do not log it as an error, and interceptors
 * outside LockInterceptor (access logs, metrics) see a failed call rather than a success with no body.
 */
export class ClientClosedRequestException extends HttpException {
  /**
   * Read by GraphQL servers (graphql-js copies a thrown error's `extensions`): the field error reads as a client
   * that left, not as the INTERNAL_SERVER_ERROR that error reporters and Apollo plugins would otherwise count.
   */
  readonly extensions = { code: 'CLIENT_CLOSED_REQUEST' } as const;

  constructor() {
    super('the HTTP client disconnected while the request waited for its lock', CLIENT_CLOSED_REQUEST);
  }
}
