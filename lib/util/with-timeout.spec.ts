// Spec: command deadlines in 16 ms buckets, each rejected once, none kept after its answer.
import { CommandTimeoutError } from '../errors/command-timeout.error';
import { DeadlineBucket, expireAfter, withTimeout, type Expirable } from './with-timeout';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** An Expirable that records what rejected it. */
function expirable(timeoutMs: number): Expirable & { readonly errors: Error[] } {
  const errors: Error[] = [];
  return { timeoutMs, deadlineSlot: undefined, errors, reject: (error) => errors.push(error) };
}

describe('deadline buckets', () => {
  it('rejects what is still pending when its bucket expires, once, with CommandTimeoutError', async () => {
    const pending = [expirable(10), expirable(10), expirable(10)];
    for (const item of pending) expireAfter(item);
    await sleep(80);
    for (const item of pending) {
      expect(item.errors).toHaveLength(1);
      expect(item.errors[0]).toBeInstanceOf(CommandTimeoutError);
      expect(item.errors[0].message).toBe('no answer within 10 ms');
    }
  });

  it('never rejects a cancelled one, and cancelling one leaves the others of its bucket armed', async () => {
    const items = Array.from({ length: 6 }, () => expirable(10));
    const buckets = items.map((item) => expireAfter(item));
    // Cancelled out of order, from the middle and both ends: slots, not positions in a shifting list.
    for (const index of [3, 0, 5]) buckets[index].cancel(items[index]);
    await sleep(80);
    expect(items.map((item) => item.errors.length)).toEqual([0, 1, 1, 0, 1, 0]);
  });

  it('ignores a cancel of something another bucket holds, and a cancel after its bucket expired', async () => {
    const early = expirable(10);
    const late = expirable(400);
    const earlyBucket = expireAfter(early);
    const lateBucket = expireAfter(late);
    expect(lateBucket).not.toBe(earlyBucket);
    // `late` sits in another bucket: the early bucket must not clear whatever shares its slot number.
    earlyBucket.cancel(late);
    await sleep(80);
    expect(early.errors).toHaveLength(1);
    earlyBucket.cancel(early);
    lateBucket.cancel(late);
    await sleep(400);
    expect(late.errors).toHaveLength(0);
  });
});

describe('a deadline bucket', () => {
  it("reuses its slots once every one was answered, and a stale cancel never clears a slot's new holder", () => {
    const bucket = new DeadlineBucket();
    const first = expirable(10);
    bucket.add(first);
    bucket.cancel(first);
    const second = expirable(10);
    bucket.add(second);
    expect(second.deadlineSlot).toBe(first.deadlineSlot);
    // `first` answered again (a duplicate callback): `second` holds that slot now and stays armed.
    bucket.cancel(first);
    bucket.expire();
    expect(first.errors).toHaveLength(0);
    expect(second.errors).toHaveLength(1);
  });

  it('keeps nothing once expired: a second expiry rejects nobody again', () => {
    const bucket = new DeadlineBucket();
    const pending = expirable(10);
    bucket.add(pending);
    bucket.expire();
    bucket.expire();
    expect(pending.errors).toHaveLength(1);
  });

  it('meets a deadline past the longest timer delay, neither early nor never', () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'performance'] });
    try {
      const far = 2 ** 31 + 5_000;
      const kept = expirable(far);
      const answered = expirable(far);
      const bucket = expireAfter(kept);
      expect(expireAfter(answered)).toBe(bucket);
      vi.advanceTimersByTime(2 ** 31 - 1);
      expect(kept.errors).toHaveLength(0);
      bucket.cancel(answered);
      vi.advanceTimersByTime(5_000 - 100);
      expect(kept.errors).toHaveLength(0);
      vi.advanceTimersByTime(200);
      expect(kept.errors.map((error) => error.constructor)).toEqual([CommandTimeoutError]);
      expect(answered.errors).toHaveLength(0);
    } finally {
      vi.useRealTimers();
    }
  });

  it('arms no timer longer than Node honours (which would fire it after 1 ms, and warn)', async () => {
    // Real timers (a spy on the global setTimeout would outlive this file: the files share one global object).
    const warnings: string[] = [];
    const onWarning = (warning: Error): void => {
      warnings.push(warning.name);
    };
    process.on('warning', onWarning);
    try {
      const far = expirable(2 ** 31 + 5_000);
      // Left armed (unref'd): it would fire in 24 days, and cancelled it rejects nothing.
      expireAfter(far).cancel(far);
      await sleep(20);
      expect(warnings).not.toContain('TimeoutOverflowWarning');
      expect(far.errors).toHaveLength(0);
    } finally {
      process.off('warning', onWarning);
    }
  });
});

describe('withTimeout', () => {
  it('passes a value or an error through unchanged when it settles in time', async () => {
    await expect(withTimeout(Promise.resolve('answer'), 1_000)).resolves.toBe('answer');
    const own = new Error('its own');
    await expect(withTimeout(Promise.reject(own), 1_000)).rejects.toBe(own);
  });

  it('rejects with CommandTimeoutError when nothing settles in time, and a late answer changes nothing', async () => {
    let answer: (value: string) => void = () => undefined;
    const late = new Promise<string>((resolve) => (answer = resolve));
    const bounded = withTimeout(late, 10);
    await expect(bounded).rejects.toBeInstanceOf(CommandTimeoutError);
    answer('too late');
    await expect(bounded).rejects.toBeInstanceOf(CommandTimeoutError);
  });
});
