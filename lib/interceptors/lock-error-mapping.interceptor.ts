// The global interceptor that gives a lock error thrown outside a @Locked route handler its client's answer and log.
import {
  Inject,
  Injectable,
  Logger,
  type CallHandler,
  type ExecutionContext,
  type NestInterceptor,
} from '@nestjs/common';
import { catchError, throwError, type Observable } from 'rxjs';
import { LockError } from '../errors';
import { LOCK_OPTIONS } from '../lock.constants';
import type { ResolvedLockOptions } from '../options/lock-options.interface';
import { logLockError, setRetryAfter, toTransportError } from './lock-transport-errors';

/**
 * Registered by LockModule for every handler (APP_INTERCEPTOR), so that a lock error thrown outside a @Locked
 * route handler — a @Locked service method called by a plain handler, `withLock` / `acquire` in one — reaches
 * its client as a @Locked route's does (see lock-transport-errors.ts).
 *
 * On HTTP the error passes through unchanged: an HttpException, which Nest answers with its status and body,
 * so that the application's exception filters, which run after every interceptor, still see the lock error
 * itself. This only sets Retry-After on a busy answer, which an exception cannot carry. On RPC, WebSocket and
 * GraphQL it becomes the transport's own exception, as LockInterceptor makes it for @Locked handlers. Either
 * way it is logged once, at its level. A @Locked handler's lock error comes out of LockInterceptor already
 * mapped (and logged), so it is not a LockError here.
 *
 * A global interceptor wraps the handler, its pipes and the interceptors named on it, not guards or
 * middleware: a lock error thrown there gets its HTTP status and body from Nest, without Retry-After or a log
 * line.
 */
@Injectable()
export class LockErrorMappingInterceptor implements NestInterceptor {
  private readonly logger = new Logger(LockErrorMappingInterceptor.name);

  constructor(@Inject(LOCK_OPTIONS) private readonly options: ResolvedLockOptions) {}

  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    if (!this.options.errorMapping) return next.handle();
    return next.handle().pipe(catchError((error: unknown) => throwError(() => this.mapped(error, context))));
  }

  private mapped(error: unknown, context: ExecutionContext): unknown {
    if (!(error instanceof LockError)) return error;
    logLockError(this.logger, error);
    const type: string = context.getType();
    if (type !== 'http') return toTransportError(error, context);
    setRetryAfter(error, context);
    return error;
  }
}
