import { HttpException, type ExecutionContext } from '@nestjs/common';

/** What this file uses of Node's response and request streams (and of a socket): a 'close' event. */
interface Closable {
  once(event: 'close', listener: () => void): unknown;
  off(event: 'close', listener: () => void): unknown;
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
 * Calls `gone` once if the HTTP client of `context` disconnects while watched: LockInterceptor watches from
 * the first attempt until the lock is taken, so that a @Locked request waiting for its key stops waiting
 * (Nest keeps running a request whose client left, which would otherwise take the lock and run the handler
 * for nobody, holding off the clients still there). Returns the function that stops watching.
 *
 * While watched nothing has been written, so any 'close' of the response means the client left (an HTTP/2
 * stream reports itself finished once reset, so finished-or-not cannot be asked). On HTTP/1.1 the socket is
 * watched too: a request pipelined behind another on its connection gets no 'close' of its own response when
 * the connection drops. Not the request's own 'close': on Node 20 it fires as soon as the body is read. A GraphQL
 * operation over HTTP is watched alike: its response cannot have ended while one of its fields still waits for a
 * lock, so a 'close' then is the client's too. Other transports have no such signal here (an SSE client or
 * a WebSocket client, an Observable's subscriber, is handled by its unsubscription).
 */
export function watchHttpClientGone(context: ExecutionContext, gone: () => void): () => void {
  const exchange = httpExchangeOf(context);
  if (!exchange) return noop;
  const response = rawOf(exchange.response);
  const request = rawOf(exchange.request) as { httpVersionMajor?: number; socket?: unknown } | undefined;
  const socket = request?.httpVersionMajor === 1 ? request.socket : undefined;
  const watched = [response, socket].filter(isClosable);
  if (watched.length === 0) return noop;
  let stopped = false;
  const stop = (): void => {
    if (stopped) return;
    stopped = true;
    for (const emitter of watched) emitter.off('close', onClose);
  };
  const onClose = (): void => {
    // The socket's 'close' emits the response's first, and an emitter calls every listener it had when the
    // event began: the second call comes even though the first removed it.
    if (stopped) return;
    stop();
    gone();
  };
  for (const emitter of watched) emitter.once('close', onClose);
  return stop;
}

/** What a GraphQL operation's context may hold of the HTTP exchange that carried it. */
interface GraphQLHttpContext {
  /** Express (Apollo, and Nest's default context): the request, whose `res` Express sets. */
  readonly req?: { readonly res?: unknown };
  readonly res?: unknown;
  /** Fastify (Mercurius): the reply, whose `request` Fastify sets. */
  readonly reply?: { readonly request?: unknown };
}

/**
 * The request and response of an HTTP route, or of a GraphQL operation served over HTTP (from its context:
 * `req` / `res` on Express, `reply` on Fastify); undefined for every other transport, and for a GraphQL
 * operation without them (a subscription over WebSocket, a context built without the request).
 */
function httpExchangeOf(context: ExecutionContext): { readonly request: unknown; readonly response: unknown } | undefined {
  const type: string = context.getType();
  if (type === 'http') {
    const http = context.switchToHttp();
    return { request: http.getRequest(), response: http.getResponse() };
  }
  if (type !== 'graphql') return undefined;
  const graphqlContext = context.getArgByIndex<GraphQLHttpContext | undefined>(2);
  const response = graphqlContext?.res ?? graphqlContext?.req?.res ?? graphqlContext?.reply;
  const request = graphqlContext?.req ?? graphqlContext?.reply?.request;
  return response === undefined ? undefined : { request, response };
}

function noop(): void {}

/** Not among Nest's HttpStatus values; nginx's code for a client that closed the connection first. */
const CLIENT_CLOSED_REQUEST = 499;

/**
 * How a @Locked request whose client left while it waited ends: status 499 ("client closed request", as
 * nginx logs it). An HttpException, so Nest's exception filters do not log it as an error, and interceptors
 * outside LockInterceptor (access logs, metrics) see a failed call rather than a success with no body.
 */
export class ClientClosedRequestException extends HttpException {
  constructor() {
    super('the HTTP client disconnected while the request waited for its lock', CLIENT_CLOSED_REQUEST);
  }
}
