// The one table of how each lock error reaches a client: its code, HTTP status and reason, and its Nest exception.
import {
  BadRequestException,
  ConflictException,
  InternalServerErrorException,
  ServiceUnavailableException,
  type HttpException,
} from '@nestjs/common';

/**
 * The one table of how a lock error reaches a client. Each error class names its row (by the code it passes to
 * LockError's constructor), so the error answers an HTTP request by itself, as any HttpException does;
 * lock-transport-errors.ts builds the RPC, WebSocket and GraphQL shapes from the same rows.
 *
 * | error | code | HTTP | RPC / WebSocket / GraphQL | logged at |
 * | --- | --- | --- | --- | --- |
 * | LockNotAcquiredError | `LOCK_BUSY` | 409 + Retry-After | code, message, keys, retryAfterMs | debug |
 * | InvalidLockKeyError | `LOCK_INVALID_KEY` | 400 | code, message | debug |
 * | LockUnavailableError | `LOCK_UNAVAILABLE` | 503 | code, message | warn |
 * | LockLostError | `LOCK_LOST` | 500 | code, message | error |
 * | LockOptionsError | — | 500, Nest's bare body | passed through (Nest's own answer) | error |
 *
 * Busy and bad-key are the client's conditions (it asked for a held lock, or sent a value that cannot name
 * one): logging them as server errors would bury real ones, so they go to debug. An unreachable store is
 * the operator's problem (warn, no stack: the message says what to check); a lost lock means work ran
 * without its lease (error, with the stack of the code that noticed). A LockOptionsError at run time is a
 * programming error: the client gets what Nest answers for any unknown error, and the log gets its stack.
 */

/** `extensions.code` (GraphQL), `code` (RPC, WebSocket, HTTP body) of each mapped lock error. */
export type LockErrorCode = 'LOCK_BUSY' | 'LOCK_INVALID_KEY' | 'LOCK_UNAVAILABLE' | 'LOCK_LOST';

/** What the client receives: the RPC / WebSocket error object, the HTTP body's extra fields, GraphQL's extensions. */
export interface LockErrorPayload {
  readonly code: LockErrorCode;
  readonly message: string;
  /** Busy only: the keys asked for (without the prefix). */
  readonly keys?: readonly string[];
  /** Busy only: when a retry may succeed, in ms (see LockNotAcquiredError.retryAfterMs); 0 when unknown. */
  readonly retryAfterMs?: number;
}

/**
 * A lock error's HTTP body (`getResponse()`): Nest's usual `statusCode`, `error` and `message`, plus the
 * payload's fields. A LockOptionsError's is Nest's bare `{ statusCode: 500, message: 'Internal server error' }`.
 */
export interface LockErrorResponse {
  readonly statusCode: number;
  /** Nest's reason phrase of the status ('Conflict', …); absent from a LockOptionsError's body. */
  readonly error?: string;
  readonly code?: LockErrorCode;
  readonly message: string;
  readonly keys?: readonly string[];
  readonly retryAfterMs?: number;
}

/** @internal One row of the table. */
export interface LockErrorRow {
  readonly httpStatus: number;
  /** Nest's reason phrase, the `error` field of its HTTP bodies. */
  readonly httpError: string;
  /**
   * Nest's own exception for the status: what LockInterceptor throws for a @Locked route (so `instanceof
   * ConflictException` holds in user filters there).
   */
  readonly httpException: new (body: object, options: { cause: unknown }) => HttpException;
  readonly log: 'debug' | 'warn' | 'error';
}

/** @internal The rows of the errors a client is told about, by code. */
export const LOCK_ERROR_ROWS: Readonly<Record<LockErrorCode, LockErrorRow>> = {
  LOCK_BUSY: { httpStatus: 409, httpError: 'Conflict', httpException: ConflictException, log: 'debug' },
  LOCK_INVALID_KEY: { httpStatus: 400, httpError: 'Bad Request', httpException: BadRequestException, log: 'debug' },
  LOCK_UNAVAILABLE: {
    httpStatus: 503,
    httpError: 'Service Unavailable',
    httpException: ServiceUnavailableException,
    log: 'warn',
  },
  LOCK_LOST: {
    httpStatus: 500,
    httpError: 'Internal Server Error',
    httpException: InternalServerErrorException,
    log: 'error',
  },
};

/** @internal The row of a lock error without a code (LockOptionsError): a programming error. */
export const UNMAPPED_LOCK_ERROR_ROW: LockErrorRow = {
  httpStatus: 500,
  httpError: 'Internal Server Error',
  httpException: InternalServerErrorException,
  log: 'error',
};

/** @internal The body of an unmapped lock error: what Nest's default handler answers for an unknown error. */
export const UNMAPPED_LOCK_ERROR_RESPONSE: LockErrorResponse = { statusCode: 500, message: 'Internal server error' };
