// Where a lock error becomes what a client receives, per transport (HTTP, RPC, WebSocket, GraphQL), and its log.
import * as nestCommon from '@nestjs/common';
import { HttpException, type ArgumentsHost, type ExecutionContext, type Logger } from '@nestjs/common';
import {
  InvalidLockKeyError,
  LockError,
  LockLostError,
  LockNotAcquiredError,
  LockUnavailableError,
  type LockErrorPayload,
} from '../errors';
import { LOCK_ERROR_ROWS, UNMAPPED_LOCK_ERROR_ROW, type LockErrorRow } from '../errors/lock-error-table';
import { loadOptionalPeer } from '../util/optional-peer';

/**
 * Where a lock error becomes what a client receives, per transport, from the errors' own table
 * (errors/lock-error-table.ts: each error answers HTTP by itself, as the HttpException it is). LockInterceptor
 * (@Locked route handlers), LockErrorMappingInterceptor (lock errors from anywhere else, registered by
 * LockModule) and LockErrorFilter (the same, opted into) all go through this file, so every transport tells
 * the same story. Any error that is not a lock error passes through unchanged, and so does a
 * LockOptionsError (a programming error: Nest answers it as it answers any unknown error).
 */

/** The error classes a client is told about (LockErrorFilter's @Catch list). */
export const MAPPED_LOCK_ERRORS = [LockNotAcquiredError, InvalidLockKeyError, LockUnavailableError, LockLostError];

function rowOf(error: unknown): LockErrorRow | undefined {
  if (!(error instanceof LockError)) return undefined;
  const { code } = error.getResponse();
  return code ? LOCK_ERROR_ROWS[code] : UNMAPPED_LOCK_ERROR_ROW;
}

/**
 * The client-facing description of a lock error: its HTTP body without Nest's fields; undefined for any other error.
 */
export function lockErrorPayload(error: unknown): LockErrorPayload | undefined {
  if (!(error instanceof LockError)) return undefined;
  const { statusCode: _statusCode, error: _reason, code, ...rest } = error.getResponse();
  return code ? { code, ...rest } : undefined;
}

/**
 * Lock errors already logged: one passes through several of the module's parts on its way out (LockInterceptor
 * of a @Locked route, the global LockErrorMappingInterceptor, a registered LockErrorFilter), and is logged by
 * the first of them only.
 */
const logged = new WeakSet<LockError>();

/**
 * Logs a lock error at its row's level (busy: debug, never an ERROR with a stack), once. Nest's own handlers
 * do not log it: it is an HttpException.
 */
export function logLockError(logger: Logger, error: unknown): void {
  const row = rowOf(error);
  if (!row || logged.has(error as LockError)) return;
  logged.add(error as LockError);
  const { message, stack } = error as LockError;
  if (row.log === 'error') logger.error(message, stack);
  else if (row.log === 'warn') logger.warn(message);
  else logger.debug(message);
}

/**
 * What to throw in place of `error` on this transport (LockInterceptor; LockErrorMappingInterceptor off
 * HTTP): Nest's HttpException of the status (with Retry-After set on a busy answer), an RpcException, a
 * WsException (after answering the message's acknowledgement with the same object), or a GraphQL error.
 * Unmapped errors and unknown transports get `error` back.
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
      if (rowOf(error)?.log === 'debug' && isEventHandler(host) && IntrinsicException)
        return new IntrinsicException(payload.message);
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

/**
 * The HTTP face for a @Locked route: Nest's own exception for the status (ConflictException, …) with the
 * error's body (Nest's usual `statusCode`, `error`, `message` plus the payload's fields); Retry-After on 409.
 */
export function toHttpException(error: unknown, host: ArgumentsHost): unknown {
  const row = rowOf(error);
  if (!row || !lockErrorPayload(error)) return error;
  setRetryAfter(error, host);
  return new row.httpException((error as LockError).getResponse(), { cause: error });
}

/** Sets Retry-After on the HTTP response of a busy error (the only one that says when to retry). */
export function setRetryAfter(error: unknown, host: ArgumentsHost): void {
  const retryAfterMs = lockErrorPayload(error)?.retryAfterMs;
  if (retryAfterMs !== undefined) setHeader(host, 'Retry-After', String(retryAfterSeconds(retryAfterMs)));
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
  const ack = host
    .getArgs()
    .slice(2)
    .find((arg): arg is (response: unknown) => void => typeof arg === 'function');
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
  const ack = host
    .getArgs()
    .slice(2)
    .find((arg): arg is () => void => typeof arg === 'function');
  ack?.();
}

/** RpcException and WsException share this shape: `new (error: string | object)`. */
type NestTransportException = new (error: string | object) => Error;

/**
 * An export of an optional peer (@nestjs/microservices, @nestjs/websockets), loaded on first use only: they
 * are not dependencies of this library, and a handler of type rpc / ws implies its package is installed. On
 * NestJS 12 (ESM-only) the require is Node's require(esm), which yields the module instance the application
 * imported, so Nest's `instanceof RpcException` checks hold.
 */
function optionalExport<T>(packageName: string, exportName: string): T | undefined {
  const peer = loadOptionalPeer<Record<string, unknown>>(packageName);
  return peer.loaded ? (peer.module[exportName] as T | undefined) : undefined;
}

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
