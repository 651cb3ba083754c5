/** Resolves with performance.now() at the moment `signal` aborts (at once if it already has). */
export function abortedAt(signal: AbortSignal): Promise<number> {
  if (signal.aborted) return Promise.resolve(performance.now());
  return new Promise((resolve) => signal.addEventListener('abort', () => resolve(performance.now()), { once: true }));
}

/** `promise`, or a rejection naming `what` after `ms`: a hang fails the test at once instead of at Jest's timeout. */
export function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} did not settle within ${ms} ms`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

/** The rejection reason of `promise`, with how long it took to settle; fails when it resolves. */
export async function rejectionOf(promise: Promise<unknown>): Promise<{ error: unknown; ms: number }> {
  const startedAt = performance.now();
  try {
    await promise;
  } catch (error) {
    return { error, ms: performance.now() - startedAt };
  }
  throw new Error('expected a rejection, but the promise resolved');
}

/** Retries `attempt` while it rejects with an error of `retryOn`, until `withinMs` has passed. */
export async function retryWhile<T>(retryOn: new (...args: never[]) => Error, attempt: () => Promise<T>, withinMs: number): Promise<T> {
  const deadline = performance.now() + withinMs;
  for (;;) {
    try {
      return await attempt();
    } catch (error) {
      if (!(error instanceof retryOn) || performance.now() > deadline) throw error;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }
}
