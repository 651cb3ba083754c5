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

/** Node's HTTP/1.1 shape: the socket's 'close' emits the response's 'close' from one of its own listeners. */
function http1(): { socket: EventEmitter; response: EventEmitter; request: { httpVersionMajor: number; socket: EventEmitter } } {
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

  it('other transports are not watched', () => {
    const { socket, response, request } = http1();
    const gone = vi.fn();
    watchHttpClientGone(contextOf('rpc', request, response), gone);
    socket.emit('close');
    expect(gone).not.toHaveBeenCalled();
  });
});
