import { InFlight } from './in-flight';

/** A promise with its settle functions outside. */
function deferred<T>() {
  let resolve: (value: T) => void = () => undefined;
  let reject: (error: Error) => void = () => undefined;
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

/** Whether `promise` has settled after the pending promise jobs ran. */
async function hasSettled(promise: Promise<unknown>): Promise<boolean> {
  let settled = false;
  void promise.then(
    () => (settled = true),
    () => (settled = true),
  );
  await new Promise((resolve) => setImmediate(resolve));
  return settled;
}

describe('InFlight', () => {
  it('is settled at once when nothing is tracked', async () => {
    expect(await hasSettled(new InFlight().settled())).toBe(true);
  });

  it('returns the tracked promise itself, and settles every waiter once everything tracked has settled', async () => {
    const inFlight = new InFlight();
    const first = deferred<string>();
    const second = deferred<string>();
    expect(inFlight.track(first.promise)).toBe(first.promise);
    void inFlight.track(second.promise);
    const waiters = [inFlight.settled(), inFlight.settled()];
    first.resolve('granted');
    expect(await hasSettled(Promise.all(waiters))).toBe(false);
    // A rejection settles too (and is left to its own caller: settled() never rejects).
    second.reject(new Error('refused'));
    await expect(second.promise).rejects.toThrow('refused');
    expect(await hasSettled(Promise.all(waiters))).toBe(true);
    await expect(Promise.all(waiters)).resolves.toEqual([undefined, undefined]);
  });

  it('counts work tracked after a wait began, and can wait again once idle', async () => {
    const inFlight = new InFlight();
    const first = deferred<void>();
    void inFlight.track(first.promise);
    const waiting = inFlight.settled();
    const later = deferred<void>();
    void inFlight.track(later.promise);
    first.resolve();
    expect(await hasSettled(waiting)).toBe(false);
    later.resolve();
    expect(await hasSettled(waiting)).toBe(true);
    const again = deferred<void>();
    void inFlight.track(again.promise);
    const secondWait = inFlight.settled();
    expect(await hasSettled(secondWait)).toBe(false);
    again.resolve();
    expect(await hasSettled(secondWait)).toBe(true);
  });
});
