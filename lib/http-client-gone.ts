import type { ExecutionContext } from '@nestjs/common';

/** The part of Node's ServerResponse (Express's `res`, Fastify's `reply.raw`) this file uses. */
interface RawResponse {
  readonly writableFinished?: boolean;
  readonly destroyed?: boolean;
  once(event: 'close', listener: () => void): unknown;
  off(event: 'close', listener: () => void): unknown;
}

function isRawResponse(value: unknown): value is RawResponse {
  const candidate = value as Partial<RawResponse> | null | undefined;
  return typeof candidate?.once === 'function' && typeof candidate.off === 'function';
}

/**
 * Calls `gone` once when the HTTP client of `context` disconnects before its response was written (the
 * response closes unfinished), so that a @Locked request still waiting for its key stops waiting: Nest keeps
 * running a request whose client left, which would otherwise take the lock and run the handler for nobody,
 * holding off the clients still there. Returns the function that stops watching. Other transports have no
 * such signal here (an SSE client, an Observable's subscriber, is handled by its unsubscription).
 */
export function watchHttpClientGone(context: ExecutionContext, gone: () => void): () => void {
  if (context.getType() !== 'http') return noop;
  const response: unknown = context.switchToHttp().getResponse();
  const raw: unknown = (response as { raw?: unknown } | undefined)?.raw ?? response;
  if (!isRawResponse(raw)) return noop;
  if (raw.destroyed === true && raw.writableFinished !== true) {
    gone();
    return noop;
  }
  const onClose = (): void => {
    if (raw.writableFinished !== true) gone();
  };
  raw.once('close', onClose);
  return () => raw.off('close', onClose);
}

function noop(): void {}
