export { abortedAt, within } from '../../support/deadlines';

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
export async function retryWhile<T>(
  retryOn: new (...args: never[]) => Error,
  attempt: () => Promise<T>,
  withinMs: number,
): Promise<T> {
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
