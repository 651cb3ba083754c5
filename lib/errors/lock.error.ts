// LockError, the base of every error this library throws: an HttpException shaped as a plain Error for developers.
import { HttpException } from '@nestjs/common';
import { markSafe, safeCause } from './safe-cause';
import {
  LOCK_ERROR_ROWS,
  UNMAPPED_LOCK_ERROR_RESPONSE,
  type LockErrorPayload,
  type LockErrorResponse,
} from './lock-error-table';

/**
 * Base class of every error this library throws, so callers can catch the family at once.
 *
 * An HttpException, so that Nest answers one that reaches it from any route with its status and body (409 for a
 * busy key, …: see lock-error-table.ts), as it answers ThrottlerException, and does not log it as a failure;
 * an application's own exception filters see the error itself, ahead of anything the library does. What
 * the client is told stays apart from `message`, which is the developer's (the advice about options, the
 * store's address and driver error). Its message and cause chain never carry a credential (see
 * safe-cause.ts): they reach logs, events and responses.
 */
export abstract class LockError extends HttpException {
  /**
   * @param payload What a client is told (its row of the table is the payload's code). Without one, a
   * programming error: Nest's bare 500.
   */
  protected constructor(message: string, options?: { cause?: unknown }, payload?: LockErrorPayload) {
    const status = payload ? LOCK_ERROR_ROWS[payload.code].httpStatus : UNMAPPED_LOCK_ERROR_RESPONSE.statusCode;
    const response: LockErrorResponse = payload
      ? { statusCode: status, error: LOCK_ERROR_ROWS[payload.code].httpError, ...payload }
      : { ...UNMAPPED_LOCK_ERROR_RESPONSE };
    super(response, status);
    this.name = new.target.name;
    keepErrorShape(this, message, options);
    markSafe(this);
  }

  override getResponse(): LockErrorResponse {
    return super.getResponse() as LockErrorResponse;
  }
}

/** HttpException's own fields, by NestJS version (10: the first three; 12: all five). */
const HTTP_EXCEPTION_FIELDS = ['response', 'status', 'options', 'errorCode'];

/**
 * Gives a lock error the shape of the plain Error it is to a developer. HttpException sets `message` from the
 * response (the client's words) and keeps its response, status and options as enumerable fields, which a logged
 * error (util.inspect, JSON) would print beside the error's own: `message` is the developer's again, not
 * enumerable, as Error's own is, and HttpException's fields stay readable (Apollo reads `response` and
 * `status`) without being enumerable. `cause` is Error's: present when given, even undefined, and not enumerable.
 */
function keepErrorShape(error: LockError, message: string, options: { cause?: unknown } | undefined): void {
  Object.defineProperty(error, 'message', { value: message, enumerable: false, writable: true, configurable: true });
  for (const field of HTTP_EXCEPTION_FIELDS) {
    if (Object.hasOwn(error, field)) Object.defineProperty(error, field, { enumerable: false });
  }
  Reflect.deleteProperty(error, 'cause');
  if (options && 'cause' in options) {
    Object.defineProperty(error, 'cause', {
      value: safeCause(options.cause),
      enumerable: false,
      writable: true,
      configurable: true,
    });
  }
}
