import type { AppInstance } from './app-instance';

export interface LoadOptions {
  readonly instances: readonly AppInstance[];
  readonly accountIds: readonly string[];
  readonly transfers: number;
  /** Requests in flight at once, over all instances. */
  readonly concurrency: number;
  /** Largest amount of one transfer, in cents (each is 1..maxAmount). */
  readonly maxAmount: number;
  /** No new request is started after this many ms. */
  readonly timeLimitMs: number;
}

export interface LoadResult {
  readonly sent: number;
  /** 201 */
  readonly ok: number;
  /** 409: the accounts stayed locked longer than the transfer's `wait`. */
  readonly busy: number;
  /** 422: not enough money. */
  readonly overdraft: number;
  /** Anything else (5xx, network errors, timeouts). */
  readonly failed: number;
  readonly failures: readonly string[];
  readonly durationMs: number;
}

const REQUEST_TIMEOUT_MS = 15_000;

/** Fires random transfers between the accounts, spread over the instances, `concurrency` at a time. */
export async function fireTransfers(options: LoadOptions): Promise<LoadResult> {
  const startedAt = Date.now();
  const stopAt = startedAt + options.timeLimitMs;
  const counts = { sent: 0, ok: 0, busy: 0, overdraft: 0, failed: 0 };
  const failures: string[] = [];

  const sendOne = async (): Promise<void> => {
    const ids = options.accountIds;
    const from = ids[randomInt(ids.length)];
    let to = ids[randomInt(ids.length - 1)];
    if (to === from) to = ids[ids.length - 1];
    const amount = 1 + randomInt(options.maxAmount);
    const instance = options.instances[randomInt(options.instances.length)];
    try {
      const response = await fetch(`${instance.url}/transfers`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ from, to, amount }),
        signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
      });
      const body = await response.text();
      if (response.status === 201) counts.ok++;
      else if (response.status === 409) counts.busy++;
      else if (response.status === 422) counts.overdraft++;
      else fail(`${response.status} from port ${instance.port}: ${body.slice(0, 200)}`);
    } catch (error) {
      fail(`port ${instance.port}: ${(error as Error).message}`);
    }
  };
  const fail = (reason: string): void => {
    counts.failed++;
    if (failures.length < 5) failures.push(reason);
  };

  const worker = async (): Promise<void> => {
    while (counts.sent < options.transfers && Date.now() < stopAt) {
      counts.sent++;
      await sendOne();
    }
  };
  await Promise.all(Array.from({ length: options.concurrency }, worker));
  return { ...counts, failures, durationMs: Date.now() - startedAt };
}

function randomInt(below: number): number {
  return Math.floor(Math.random() * below);
}
