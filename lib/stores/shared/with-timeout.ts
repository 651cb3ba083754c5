/** Raised by withTimeout; the store maps it to LockUnavailableError. */
export class CommandTimeoutError extends Error {
  constructor(readonly timeoutMs: number) {
    super(`no answer within ${timeoutMs} ms`);
    this.name = 'CommandTimeoutError';
  }
}

/**
 * Rejects with CommandTimeoutError when `promise` has not settled within `timeoutMs`. The command itself
 * is not cancelled (Redis cannot be told to forget it): callers undo what a late success would leave.
 */
export function withTimeout<T>(promise: Promise<T>, timeoutMs: number): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const timer = setTimeout(() => reject(new CommandTimeoutError(timeoutMs)), timeoutMs);
    promise.then(
      (value) => {
        clearTimeout(timer);
        resolve(value);
      },
      (error: unknown) => {
        clearTimeout(timer);
        reject(error);
      },
    );
  });
}
