/** Resolves with performance.now() at the moment `signal` aborts (at once if it already has). */
export function abortedAt(signal: AbortSignal): Promise<number> {
  if (signal.aborted) return Promise.resolve(performance.now());
  return new Promise((resolve) => signal.addEventListener('abort', () => resolve(performance.now()), { once: true }));
}

/** `promise`, or a rejection naming `what` after `ms`: a hang fails the test quickly instead of at the Jest timeout. */
export function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} did not settle within ${ms} ms`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}
