import * as nestCommon from '@nestjs/common';
import {
  BadRequestException,
  ConflictException,
  HttpException,
  InternalServerErrorException,
  ServiceUnavailableException,
  type ArgumentsHost,
  type ExecutionContext,
  type Logger,
} from '@nestjs/common';
import { InvalidLockKeyError, LockLostError, LockNotAcquiredError, LockUnavailableError, type LockError } from './errors';
import { formatKeys } from './errors/format-keys';

/**
 * The one place where a lock error becomes what a client receives, per transport. The errors themselves
 * know nothing of transports; LockInterceptor (route handlers) and LockErrorFilter (errors thrown from
 * anywhere else, opted into) both go through this file, so every transport tells the same story.
 *
 * | error                 | code               | HTTP                  | RPC / WebSocket / GraphQL          | logged at |
 * | --------------------- | ------------------ | --------------------- | ---------------------------------- | --------- |
 * | LockNotAcquiredError  | `LOCK_BUSY`        | 409 + Retry-After     | code, message, keys, retryAfterMs  | debug     |
 * | InvalidLockKeyError   | `LOCK_INVALID_KEY` | 400                   | code, message                      | debug     |
 * | LockUnavailableError  | `LOCK_UNAVAILABLE` | 503                   | code, message                      | warn      |
 * | LockLostError         | `LOCK_LOST`        | 500                   | code, message                      | error     |
 *
 * Busy and bad-key are the client's conditions (it asked for a held lock, or sent a value that cannot name
 * one): logging them as server errors would bury real ones, so they go to debug. An unreachable store is
 * the operator's problem (warn, no stack: the message says what to check); a lost lock means work ran
 * without its lease (error, with the stack of the code that noticed). Any other error — LockOptionsError
 * included, a programming error — passes through unchanged.
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

interface LockErrorRow {
  readonly error: abstract new (...args: never[]) => LockError;
  readonly code: LockErrorCode;
  readonly httpStatus: number;
  /** Nest's own exception for the status (so `instanceof ConflictException` holds in user filters). */
  readonly httpException: new (body: object, options: { cause: unknown }) => HttpException;
  /** Nest's reason phrase, the `error` field of its HTTP bodies. */
  readonly httpError: string;
  readonly log: 'debug' | 'warn' | 'error';
}

const LOCK_ERROR_TABLE: readonly LockErrorRow[] = [
  { error: LockNotAcquiredError, code: 'LOCK_BUSY',        httpStatus: 409, httpException: ConflictException,            httpError: 'Conflict',              log: 'debug' },
  { error: InvalidLockKeyError,  code: 'LOCK_INVALID_KEY', httpStatus: 400, httpException: BadRequestException,          httpError: 'Bad Request',           log: 'debug' },
  { error: LockUnavailableError, code: 'LOCK_UNAVAILABLE', httpStatus: 503, httpException: ServiceUnavailableException,  httpError: 'Service Unavailable',   log: 'warn' },
  { error: LockLostError,        code: 'LOCK_LOST',        httpStatus: 500, httpException: InternalServerErrorException, httpError: 'Internal Server Error', log: 'error' },
];

/** The error classes this file maps (LockErrorFilter's @Catch list). */
export const MAPPED_LOCK_ERRORS = LOCK_ERROR_TABLE.map((row) => row.error);

function rowOf(error: unknown): LockErrorRow | undefined {
  return LOCK_ERROR_TABLE.find((row) => error instanceof row.error);
}

/** The client-facing description of a mapped lock error, or undefined for any other error. */
export function lockErrorPayload(error: unknown): LockErrorPayload | undefined {
  const row = rowOf(error);
  if (!row) return undefined;
  const { message } = error as LockError;
  // Without the advice about the 'wait' option, which is the developer's to set, not the client's.
  if (error instanceof LockNotAcquiredError) {
    return { code: row.code, message: `${error.summary} Retry later.`, keys: [...error.keys], retryAfterMs: error.retryAfterMs };
  }
  // The store's own words (a host and port, a driver's error, node counts) are for the operator's log, not
  // for a client: an unavailable store or a lost lock is described to the client in general terms.
  if (error instanceof LockUnavailableError) return { code: row.code, message: `Lock store unavailable for ${formatKeys(error.keys)}; try again later.` };
  if (error instanceof LockLostError) return { code: row.code, message: `The lock on ${formatKeys(error.keys)} was lost while the request ran.` };
  return { code: row.code, message };
}

/** Logs a mapped lock error at its row's level (busy: debug, never an ERROR with a stack). */
export function logLockError(logger: Logger, error: unknown): void {
  const row = rowOf(error);
  if (!row) return;
  const { message, stack } = error as LockError;
  if (row.log === 'error') logger.error(message, stack);
  else if (row.log === 'warn') logger.warn(message);
  else logger.debug(message);
}

/**
 * What to throw in place of `error` on this transport (LockInterceptor): an HttpException (with
 * Retry-After set on a busy answer), an RpcException, a WsException (after answering the message's
 * acknowledgement with the same object), or a GraphQL error. Unmapped errors and unknown transports get
 * `error` back.
 */
export function toTransportError(error: unknown, host: ArgumentsHost): unknown {
  const payload = lockErrorPayload(error);
  if (!payload) return error;
  const type: string = host.getType();
  switch (type) {
    case 'http':
      return toHttpException(error, host);
    case 'rpc': {
      // An event handler has no reply to carry an RpcException, and Nest logs an unfiltered one at ERROR; a
      // busy or bad-key event is the sender's condition (already logged at debug), so it is raised as an
      // exception Nest does not log (IntrinsicException, NestJS 11 and later).
      if (rowOf(error)?.log === 'debug' && isEventHandler(host) && IntrinsicException) return new IntrinsicException(payload.message);
      const RpcException = optionalExport<NestTransportException>('@nestjs/microservices', 'RpcException');
      return RpcException ? new RpcException(rpcOrWsBody(payload)) : error;
    }
    case 'ws': {
      const WsException = optionalExport<NestTransportException>('@nestjs/websockets', 'WsException');
      answerAcknowledgement(host, payload);
      return WsException ? new WsException(rpcOrWsBody(payload)) : error;
    }
    case 'graphql':
      return new LockGraphQLError(payload);
    default:
      return error;
  }
}

/** The HTTP face: Nest's usual body (`statusCode`, `error`, `message`) plus the payload's fields; Retry-After on 409. */
export function toHttpException(error: unknown, host: ArgumentsHost): unknown {
  const row = rowOf(error);
  const payload = lockErrorPayload(error);
  if (!row || !payload) return error;
  if (payload.retryAfterMs !== undefined) setHeader(host, 'Retry-After', String(retryAfterSeconds(payload.retryAfterMs)));
  return new row.httpException({ statusCode: row.httpStatus, error: row.httpError, ...payload }, { cause: error });
}

/** Retry-After is whole seconds: the estimate rounded up, at least 1 (also when unknown). */
export function retryAfterSeconds(retryAfterMs: number): number {
  return Math.max(1, Math.ceil(retryAfterMs / 1000));
}

/** The object RPC and WebSocket clients receive: Nest's `{ status: 'error', message }` plus the payload's fields. */
export function rpcOrWsBody(payload: LockErrorPayload): { status: 'error' } & LockErrorPayload {
  return { status: 'error', ...payload };
}

/**
 * Answers a WebSocket message's acknowledgement with the error object. Nest passes the ack callback after
 * the payload when the client asked for one, and never calls it when the handler fails: without this the
 * client's `emitWithAck` would wait until its own timeout. (A socket.io ack answers once; a later call is
 * ignored.)
 */
export function answerAcknowledgement(host: ArgumentsHost, payload: LockErrorPayload): void {
  const ack = host.getArgs().slice(2).find((arg): arg is (response: unknown) => void => typeof arg === 'function');
  ack?.(rpcOrWsBody(payload));
}

/**
 * Answers a WebSocket message's acknowledgement with nothing, for a @Locked handler skipped because its key
 * was busy (`onBusy: 'skip'`): Nest sends no acknowledgement for an undefined result, and the client's
 * `emitWithAck` would wait for its own timeout. The client receives `undefined`, as a method skipped by
 * onBusy resolves undefined.
 */
export function answerSkippedAcknowledgement(host: ArgumentsHost): void {
  if (host.getType() !== 'ws') return;
  const ack = host.getArgs().slice(2).find((arg): arg is () => void => typeof arg === 'function');
  ack?.();
}

/** RpcException and WsException share this shape: `new (error: string | object)`. */
type NestTransportException = new (error: string | object) => Error;

/**
 * An export of an optional peer (@nestjs/microservices, @nestjs/websockets), loaded on first use only:
 * they are not dependencies of this library, and a handler of type rpc / ws implies its package is
 * installed. Loaded by `require`, which on NestJS 12 (ESM-only) is Node's require(esm) and yields the same
 * module instance the application imported, so Nest's `instanceof RpcException` checks hold.
 */
function optionalExport<T>(packageName: string, exportName: string): T | undefined {
  let loaded = optionalPackages.get(packageName);
  if (loaded === undefined) {
    try {
      // eslint-disable-next-line @typescript-eslint/no-require-imports -- optional package, see above
      loaded = require(packageName) as Record<string, unknown>;
    } catch {
      loaded = null;
    }
    optionalPackages.set(packageName, loaded);
  }
  return (loaded?.[exportName] as T | undefined) ?? undefined;
}

const optionalPackages = new Map<string, Record<string, unknown> | null>();

/** @EventPattern's value of 'microservices:handler_type' (PatternHandler.EVENT). */
const EVENT_HANDLER = 2;

function isEventHandler(host: ArgumentsHost): boolean {
  const handler = (host as Partial<ExecutionContext>).getHandler?.();
  return handler !== undefined && Reflect.getMetadata('microservices:handler_type', handler) === EVENT_HANDLER;
}

/** NestJS 11+: an exception its handlers pass on without logging it. */
const IntrinsicException = (nestCommon as { IntrinsicException?: new (message: string) => Error }).IntrinsicException;

/**
 * The base of the GraphQL error: an exception Nest's GraphQL exception handler does not log as an ERROR
 * (it logs every other Error with its stack). That is IntrinsicException on NestJS 11 and later; NestJS
 * 10 skipped HttpException instead, so there the base is an HttpException whose response is a plain
 * string — which @nestjs/apollo's HTTP-error formatting (it looks for `response.statusCode`) leaves alone.
 */
const QuietException: new (message: string) => Error =
  IntrinsicException ??
  class extends HttpException {
    constructor(message: string) {
      super(message, 500);
    }
  };

/**
 * A GraphQL field error with `extensions.code` (and keys, retryAfterMs when busy). graphql-js copies the
 * `extensions` of an error a resolver throws into the GraphQLError it reports, so the `graphql` package is
 * not needed here.
 */
class LockGraphQLError extends QuietException {
  readonly extensions: Omit<LockErrorPayload, 'message'>;

  constructor({ message, ...extensions }: LockErrorPayload) {
    super(message);
    this.name = 'LockGraphQLError';
    this.extensions = extensions;
  }
}

/** The GraphQL face, for LockErrorFilter (GraphQL exception filters return the error to report). */
export function toGraphQLError(error: unknown): unknown {
  const payload = lockErrorPayload(error);
  return payload ? new LockGraphQLError(payload) : error;
}

/** Express (`setHeader`) and Fastify (`header`) responses alike; skipped once the headers are out (SSE). */
function setHeader(host: ArgumentsHost, name: string, value: string): void {
  const response = host.switchToHttp().getResponse<{
    headersSent?: boolean;
    sent?: boolean;
    setHeader?: (name: string, value: string) => void;
    header?: (name: string, value: string) => void;
  }>();
  if (!response || response.headersSent || response.sent) return;
  if (typeof response.setHeader === 'function') response.setHeader(name, value);
  else if (typeof response.header === 'function') response.header(name, value);
}
