import {
  BadRequestException,
  ConflictException,
  InternalServerErrorException,
  ServiceUnavailableException,
  type ExecutionContext,
  type HttpException,
} from '@nestjs/common';
import { InvalidLockKeyError, LockLostError, LockNotAcquiredError, LockUnavailableError } from './errors';

/**
 * The HTTP face of the lock errors, applied by LockInterceptor on HTTP routes only (the errors themselves
 * know nothing of HTTP; RPC and WebSocket handlers get them as they are). Any other error is returned
 * unchanged.
 */
export function toHttpError(error: unknown, context: ExecutionContext): unknown {
  const exception = httpExceptionFor(error);
  if (exception instanceof ConflictException && error instanceof LockNotAcquiredError) {
    setHeader(context, 'Retry-After', String(retryAfterSeconds(error.retryAfterMs)));
  }
  return exception ?? error;
}

/** Seconds until the holder's lease ends, rounded up, at least 1 (also when unknown). */
export function retryAfterSeconds(retryAfterMs: number): number {
  return Math.max(1, Math.ceil(retryAfterMs / 1000));
}

function httpExceptionFor(error: unknown): HttpException | undefined {
  const options = { cause: error };
  if (error instanceof LockNotAcquiredError) return new ConflictException(error.message, options);
  if (error instanceof LockUnavailableError) return new ServiceUnavailableException(error.message, options);
  if (error instanceof InvalidLockKeyError) return new BadRequestException(error.message, options);
  if (error instanceof LockLostError) return new InternalServerErrorException(error.message, options);
  return undefined;
}

/** Express (`setHeader`) and Fastify (`header`) responses alike; skipped once the headers are out (SSE). */
function setHeader(context: ExecutionContext, name: string, value: string): void {
  const response = context.switchToHttp().getResponse<{
    headersSent?: boolean;
    sent?: boolean;
    setHeader?: (name: string, value: string) => void;
    header?: (name: string, value: string) => void;
  }>();
  if (!response || response.headersSent || response.sent) return;
  if (typeof response.setHeader === 'function') response.setHeader(name, value);
  else if (typeof response.header === 'function') response.header(name, value);
}
