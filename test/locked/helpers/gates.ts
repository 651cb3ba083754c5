/**
 * Test-controlled checkpoints inside handlers and methods, so that overlap is shown by behaviour (two calls
 * inside at once, or not) rather than by sleeping and hoping for a schedule.
 */
export class Gate {
  /** How many calls have reached the gate. */
  arrivals = 0;
  private opened = false;
  private readonly waiters: (() => void)[] = [];
  private readonly arrivalWaiters: { count: number; resolve: () => void }[] = [];

  /** Called by the code under test: records the arrival, then waits until the test opens the gate. */
  async pass(): Promise<void> {
    this.arrivals++;
    for (const waiter of this.arrivalWaiters.filter((item) => item.count <= this.arrivals)) {
      this.arrivalWaiters.splice(this.arrivalWaiters.indexOf(waiter), 1);
      waiter.resolve();
    }
    if (!this.opened) await new Promise<void>((resolve) => this.waiters.push(resolve));
  }

  /** Resolves once `count` calls have arrived. */
  reached(count = 1): Promise<void> {
    if (this.arrivals >= count) return Promise.resolve();
    return new Promise((resolve) => this.arrivalWaiters.push({ count, resolve }));
  }

  /** Lets every waiting and future call through. */
  open(): void {
    this.opened = true;
    this.waiters.splice(0).forEach((resolve) => resolve());
  }
}

/** Gates by name, created on first use. */
export class Gates {
  private readonly gates = new Map<string, Gate>();

  get(name: string): Gate {
    let gate = this.gates.get(name);
    if (!gate) this.gates.set(name, (gate = new Gate()));
    return gate;
  }

  openAll(): void {
    this.gates.forEach((gate) => gate.open());
  }
}

/** Which of two promises settles first: `'first'` or `'second'`. */
export async function firstToSettle(first: Promise<unknown>, second: Promise<unknown>): Promise<'first' | 'second'> {
  const tag = <T extends string>(promise: Promise<unknown>, name: T) =>
    promise.then(
      () => name,
      () => name,
    );
  return Promise.race([tag(first, 'first' as const), tag(second, 'second' as const)]);
}

/** `promise`, or a rejection naming `what` after `ms`: a hang fails the test quickly instead of at the Jest timeout. */
export function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} did not settle within ${ms} ms`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

/** Polls `check` until it returns true, or fails after `ms`. */
export async function eventually(check: () => Promise<boolean>, ms: number, what: string): Promise<void> {
  const deadline = performance.now() + ms;
  while (!(await check())) {
    if (performance.now() > deadline) throw new Error(`${what}: still not true after ${ms} ms`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}
