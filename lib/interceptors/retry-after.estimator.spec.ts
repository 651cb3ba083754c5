import { LockNotAcquiredError } from '../errors';
import { RetryAfterEstimator } from './retry-after.estimator';

/** The estimator reads performance.now(): driven here by hand, so each figure is exact. */
describe('RetryAfterEstimator', () => {
  let now = 0;
  let estimator: RetryAfterEstimator;
  const site = {};
  const otherSite = {};
  const LEASE_LEFT = 9_000;

  beforeEach(() => {
    now = 1_000;
    vi.spyOn(performance, 'now').mockImplementation(() => now);
    estimator = new RetryAfterEstimator();
  });
  afterEach(() => vi.restoreAllMocks());

  /** A completed hold of `keys` lasting `ms`. */
  function hold(keys: string[], ms: number, through: object = site): void {
    const ended = estimator.holdStarted(keys, through);
    now += ms;
    ended();
  }

  it('with nothing recorded: the remaining lease (0 when unknown)', () => {
    expect(estimator.estimate(['a'], LEASE_LEFT)).toBe(LEASE_LEFT);
    expect(estimator.estimate(['a'], 0)).toBe(0);
  });

  it("holder elsewhere: the median of the key's recent holds, bounded by the lease", () => {
    for (const ms of [100, 300, 200, 5_000]) hold(['a'], ms);
    expect(estimator.estimate(['a'], LEASE_LEFT)).toBe(250);
    expect(estimator.estimate(['a'], 120)).toBe(120);
  });

  it('holder in this process: the typical hold minus what it has held so far, at least 1 ms', () => {
    hold(['a'], 400);
    const ended = estimator.holdStarted(['a'], site);
    now += 150;
    expect(estimator.estimate(['a'], LEASE_LEFT)).toBe(250);
    now += 1_000;
    expect(estimator.estimate(['a'], LEASE_LEFT)).toBe(1);
    ended();
  });

  it("a key with no history borrows its @Locked method's holds (keys like order:{id})", () => {
    hold(['order:1'], 600);
    hold(['order:2'], 800);
    expect(estimator.estimate(['order:3'], LEASE_LEFT, site)).toBe(700);
    expect(estimator.estimate(['order:3'], LEASE_LEFT, otherSite)).toBe(LEASE_LEFT);
  });

  it('minHold: a hold released sooner keeps the key until grant + minHold, and counts as that long', () => {
    const ended = estimator.holdStarted(['job'], site, 5_000);
    now += 10;
    ended();
    // Before: the 10 ms the method ran, while the key stayed busy for another 4.99 s.
    expect(estimator.estimate(['job'], LEASE_LEFT)).toBe(5_000);
    expect(estimator.estimate(['job:other'], LEASE_LEFT, site)).toBe(5_000);
    // Redis' remaining time of the hold-over bounds it as for any lease.
    expect(estimator.estimate(['job'], 4_990)).toBe(4_990);
    // A hold longer than minHold counts as it was.
    const longer = estimator.holdStarted(['slow'], otherSite, 100);
    now += 700;
    longer();
    expect(estimator.estimate(['slow'], LEASE_LEFT)).toBe(700);
  });

  it('only the last 8 holds count', () => {
    for (let i = 0; i < 8; i++) hold(['a'], 1_000);
    for (let i = 0; i < 8; i++) hold(['a'], 10);
    expect(estimator.estimate(['a'], LEASE_LEFT)).toBe(10);
  });

  it('several keys: the latest of them', () => {
    hold(['a'], 100);
    hold(['b'], 700);
    expect(estimator.estimate(['a', 'b'], LEASE_LEFT)).toBe(700);
  });

  it('a reentrant hold is not timed on its own: the key is held from its first grant to its last release', () => {
    const outer = estimator.holdStarted(['a'], site);
    now += 100;
    const inner = estimator.holdStarted(['a'], otherSite);
    now += 10;
    inner();
    now += 390;
    outer();
    expect(estimator.estimate(['a'], LEASE_LEFT)).toBe(500);
    // The inner method never held the key on its own, so it has no history either.
    expect(estimator.estimate(['z'], LEASE_LEFT, otherSite)).toBe(LEASE_LEFT);
  });

  it('ending a hold twice counts once', () => {
    const ended = estimator.holdStarted(['a'], site);
    now += 300;
    ended();
    now += 300;
    ended();
    expect(estimator.estimate(['a'], LEASE_LEFT)).toBe(300);
  });

  it("busyError: the same keys and waited time, the estimate, and the call's wait in the message", () => {
    hold(['a'], 300);
    const raw = new LockNotAcquiredError(['a'], LEASE_LEFT, 1.4);
    expect(raw.message).toContain('after waiting 1 ms');

    const once = estimator.busyError(raw, { site, wait: 0 });
    expect(once).toBeInstanceOf(LockNotAcquiredError);
    expect(once.keys).toEqual(['a']);
    expect(once.retryAfterMs).toBe(300);
    expect(once.waitedMs).toBe(1.4);
    expect(once.message).toBe(
      `Lock on "a" not acquired: held by another owner. Retry later, or set the 'wait' option to queue for it.`,
    );

    const waited = estimator.busyError(new LockNotAcquiredError(['a'], LEASE_LEFT, 2_003), { site, wait: 2_000 });
    expect(waited.message).toBe(
      `Lock on "a" not acquired: still held by another owner after ` +
        `waiting 2000 ms. Retry later or raise the 'wait' option.`,
    );

    // A semaphore's or a reader's wording survives the estimate: @Locked(…, { limit }) says its permits are taken.
    const permits = estimator.busyError(new LockNotAcquiredError(['a'], LEASE_LEFT, 0.2, { wait: 0, limit: 3 }), {
      site,
      wait: 0,
    });
    expect(permits.message).toBe(
      `Lock on "a" not acquired: all 3 permits are taken. Retry later, or set the 'wait' option to queue for it.`,
    );
    expect(permits.details).toEqual({ wait: 0, limit: 3 });
  });
});
