/**
 * A Redis command that got no answer within its timeout (see withTimeout). Internal to the Redis stores, which
 * report it as LockUnavailableError (this error as its cause); not exported from the errors' index.
 */
export class CommandTimeoutError extends Error {
  constructor(readonly timeoutMs: number) {
    super(`no answer within ${timeoutMs} ms`);
    this.name = 'CommandTimeoutError';
  }
}
