import { EventEmitter } from 'node:events';
import type { ExecutionContext } from '@nestjs/common';
import { watchHttpClientGone } from './http-client-gone';

/** An execution context of `type` whose HTTP request and response are the given objects. */
function contextOf(type: string, request: object, response: object): ExecutionContext {
  return {
    getType: () => type,
    switchToHttp: () => ({ getRequest: () => request, getResponse: () => response, getNext: () => undefined }),
  } as unknown as ExecutionContext;
}

/** A GraphQL resolver's execution context: (root, args, context, info). */
function graphqlContextOf(graphqlContext: object): ExecutionContext {
  const args = [undefined, {}, graphqlContext, {}];
  return {
    getType: () => 'graphql',
    getArgByIndex: (index: number) => args[index],
    getArgs: () => args,
  } as unknown as ExecutionContext;
}

/** Node's HTTP/1.1 shape: the socket's 'close' emits the response's 'close' from one of its own listeners. */
function http1(): {
  socket: EventEmitter;
  response: EventEmitter;
  request: { httpVersionMajor: number; socket: EventEmitter };
} {
  const socket = new EventEmitter();
  const response = new EventEmitter();
  socket.on('close', () => response.emit('close'));
  return { socket, response, request: { httpVersionMajor: 1, socket } };
}

describe('watchHttpClientGone', () => {
  it('calls gone once when the connection closes, though both the response and the socket report it', () => {
    const { socket, response, request } = http1();
    const gone = vi.fn();
    watchHttpClientGone(contextOf('http', request, response), gone);
    socket.emit('close');
    expect(gone).toHaveBeenCalledTimes(1);
    expect(response.listenerCount('close')).toBe(0);
    expect(socket.listenerCount('close')).toBe(1); // Node's own listener only
  });

  it("a pipelined request's connection dropping counts, with no 'close' of its own response", () => {
    const socket = new EventEmitter();
    const gone = vi.fn();
    watchHttpClientGone(contextOf('http', { httpVersionMajor: 1, socket }, new EventEmitter()), gone);
    socket.emit('close');
    expect(gone).toHaveBeenCalledTimes(1);
  });

  it('Fastify: the raw request and response behind `.raw` are watched', () => {
    const { socket, response, request } = http1();
    const gone = vi.fn();
    watchHttpClientGone(contextOf('http', { raw: request }, { raw: response }), gone);
    socket.emit('close');
    expect(gone).toHaveBeenCalledTimes(1);
  });

  it("HTTP/2: the stream's response is watched (its socket is the session's, not the request's)", () => {
    const session = new EventEmitter();
    const response = new EventEmitter();
    const gone = vi.fn();
    watchHttpClientGone(contextOf('http', { httpVersionMajor: 2, socket: session }, response), gone);
    expect(session.listenerCount('close')).toBe(0);
    response.emit('close');
    expect(gone).toHaveBeenCalledTimes(1);
  });

  it('stops watching when told: a close afterwards is not reported, and no listener is left', () => {
    const { socket, response, request } = http1();
    const gone = vi.fn();
    const stop = watchHttpClientGone(contextOf('http', request, response), gone);
    stop();
    socket.emit('close');
    expect(gone).not.toHaveBeenCalled();
    expect(response.listenerCount('close')).toBe(0);
  });

  it('many watchers of one request (the @Locked fields of a GraphQL operation) share one listener per emitter', () => {
    const { socket, response, request } = http1();
    const context = contextOf('http', request, response);
    const calls = Array.from({ length: 20 }, () => vi.fn());
    const stops = calls.map((gone) => watchHttpClientGone(context, gone));
    expect(response.listenerCount('close')).toBe(1);
    expect(socket.listenerCount('close')).toBe(2); // Node's own, and the shared one
    stops[0]();
    socket.emit('close');
    expect(calls[0]).not.toHaveBeenCalled();
    for (const gone of calls.slice(1)) expect(gone).toHaveBeenCalledTimes(1);
    expect(response.listenerCount('close')).toBe(0);
    expect(socket.listenerCount('close')).toBe(1);
  });

  it('the last watcher to stop removes the shared listener; a new watcher afterwards gets one again', () => {
    const { socket, response, request } = http1();
    const context = contextOf('http', request, response);
    const stops = [vi.fn(), vi.fn()].map((gone) => watchHttpClientGone(context, gone));
    for (const stop of stops) stop();
    expect(response.listenerCount('close')).toBe(0);
    expect(socket.listenerCount('close')).toBe(1);
    const gone = vi.fn();
    watchHttpClientGone(context, gone);
    socket.emit('close');
    expect(gone).toHaveBeenCalledTimes(1);
  });

  it('a connection already closed when watching begins is reported at once (its close will not come again)', () => {
    const { socket, response, request } = http1();
    Object.assign(socket, { destroyed: true });
    const gone = vi.fn();
    watchHttpClientGone(contextOf('http', request, response), gone);
    expect(gone).toHaveBeenCalledTimes(1);
    expect(response.listenerCount('close')).toBe(0);
  });

  it.each([
    [
      'Apollo on Express: req, whose res Express sets',
      (request: object, response: object) => ({ req: Object.assign(request, { res: response }) }),
    ],
    ['Apollo on Fastify: the Fastify request alone', (request: object) => ({ req: { raw: request } })],
    [
      'Mercurius: the reply',
      (request: object, response: object) => ({ reply: { raw: response, request: { raw: request } } }),
    ],
  ])('GraphQL over HTTP (%s): the client leaving is reported', (_shape, graphqlContext) => {
    const { socket, response, request } = http1();
    const gone = vi.fn();
    watchHttpClientGone(graphqlContextOf(graphqlContext(request, response)), gone);
    socket.emit('close');
    expect(gone).toHaveBeenCalledTimes(1);
  });

  it('GraphQL without the request in its context is not watched', () => {
    const gone = vi.fn();
    expect(() => watchHttpClientGone(graphqlContextOf({ user: 'someone' }), gone)()).not.toThrow();
    expect(gone).not.toHaveBeenCalled();
  });

  it('other transports are not watched', () => {
    const { socket, response, request } = http1();
    const gone = vi.fn();
    watchHttpClientGone(contextOf('rpc', request, response), gone);
    socket.emit('close');
    expect(gone).not.toHaveBeenCalled();
  });
});
