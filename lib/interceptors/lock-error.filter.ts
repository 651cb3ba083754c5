// An opt-in exception filter giving lock errors the answer a @Locked route gives, for applications that register it.
import { Catch, Injectable, Logger, type ArgumentsHost, type ExceptionFilter } from '@nestjs/common';
import { BaseExceptionFilter, HttpAdapterHost } from '@nestjs/core';
import { throwError, type Observable } from 'rxjs';
import type { LockError } from '../errors';
import {
  MAPPED_LOCK_ERRORS,
  answerAcknowledgement,
  lockErrorPayload,
  logLockError,
  rpcOrWsBody,
  toGraphQLError,
  toHttpException,
} from './lock-transport-errors';

/**
 * Gives lock errors thrown outside a @Locked route handler — a @Locked service method called from a
 * plain route, `LockService.acquire()` in a handler — the same answer a @Locked route gives (see
 * lock-transport-errors.ts): 409 + Retry-After, 400, 503, 500 on HTTP, and the RPC, WebSocket and GraphQL
 * shapes on those transports.
 *
 * LockModule does this by itself (LockErrorMappingInterceptor, the `errorMapping` option), without a filter,
 * so that the application's own filters keep seeing lock errors. This filter stays for applications that
 * register it (`{ provide: APP_FILTER, useClass: LockErrorFilter }`, `app.useGlobalFilters(…)`,
 * `@UseFilters(LockErrorFilter)`); it gives the same answers. Beside the interceptor it only answers HTTP
 * (elsewhere the interceptor has already turned the error into the transport's exception), and an error the
 * interceptor logged is not logged again.
 */
@Catch(...MAPPED_LOCK_ERRORS)
@Injectable()
export class LockErrorFilter implements ExceptionFilter<LockError> {
  private readonly logger = new Logger(LockErrorFilter.name);

  constructor(private readonly adapterHost: HttpAdapterHost) {}

  catch(error: LockError, host: ArgumentsHost): unknown {
    logLockError(this.logger, error);
    const payload = lockErrorPayload(error);
    const type: string = host.getType();
    if (!payload) throw error;
    switch (type) {
      case 'http':
        // Nest's own HTTP filter writes the answer, so Express and Fastify get their usual error bodies.
        return new BaseExceptionFilter(this.adapterHost.httpAdapter).catch(toHttpException(error, host), host);
      case 'rpc':
        // What Nest's RPC filter does with an RpcException: the client's observable errors with the object.
        return rpcError(rpcOrWsBody(payload));
      case 'ws':
        emitWsException(host, rpcOrWsBody(payload));
        answerAcknowledgement(host, payload);
        return undefined;
      case 'graphql':
        // A GraphQL exception filter returns the error the field reports.
        return toGraphQLError(error);
      default:
        throw error;
    }
  }
}

function rpcError(body: object): Observable<never> {
  return throwError(() => body);
}

/** What Nest's WebSocket filter does with a WsException: an `exception` event (socket.io) or message (ws). */
function emitWsException(host: ArgumentsHost, body: object): void {
  const client = host.switchToWs().getClient<{
    readyState?: unknown;
    send?: (data: string) => void;
    emit?: (event: string, data: unknown) => void;
  }>();
  if (typeof client.readyState === 'number' && typeof client.send === 'function') {
    client.send(JSON.stringify({ event: 'exception', data: body }));
  } else {
    client.emit?.('exception', body);
  }
}
