import { setTimeout as sleep } from 'node:timers/promises';

/** Polls `check` every 20 ms until it holds, or fails naming `what` after `ms`. */
export async function eventually(check: () => Promise<boolean>, ms: number, what: string): Promise<void> {
  const deadline = performance.now() + ms;
  for (;;) {
    if (await check()) return;
    if (performance.now() > deadline) throw new Error(`${what}: still not true after ${ms} ms`);
    await sleep(20);
  }
}
