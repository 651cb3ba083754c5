// A lease held by another instance in the in-process store (LockTesting.holdElsewhere): its renewal and release.
import { asyncDispose } from '../engine/lease/held-lock';
import type { AcquireGrant, AcquireRequest, LockStore } from '../stores/lock-store.interface';
import type { HeldElsewhere } from './lock-testing.interface';

/**
 * A lease another instance holds in the in-process store (LockTesting.holdElsewhere): granted, renewed and
 * released through the same store calls as the application's own, under a lease value naming that instance.
 */
export class ElsewhereHold implements HeldElsewhere {
  readonly keys: readonly string[];
  readonly fences: Readonly<Record<string, number>>;
  private renewal: NodeJS.Timeout | undefined;
  private ended = false;

  constructor(
    private readonly store: LockStore,
    private readonly request: AcquireRequest,
    readonly instance: string,
    grant: AcquireGrant,
    /** Renewed until released (a live holder), or left to run out at its ttl. */
    renewed: boolean,
    private readonly onEnd: (hold: ElsewhereHold) => void,
  ) {
    this.keys = request.keys.map((key) => key.name);
    const fences: Record<string, number> = Object.create(null) as Record<string, number>;
    this.keys.forEach((key, index) => (fences[key] = grant.fences[index]));
    this.fences = Object.freeze(fences);
    if (renewed) this.scheduleRenewal();
  }

  get fence(): number {
    return this.fences[this.keys[0]];
  }

  release(): Promise<boolean> {
    if (this.ended) return Promise.resolve(false);
    this.end();
    return this.store.release(this.request.keys, this.request.token, 0, this.request.shape);
  }

  async [asyncDispose](): Promise<void> {
    await this.release();
  }

  /** Stops renewing, without releasing: the application shuts down, and its store closes. */
  end(): void {
    this.ended = true;
    clearTimeout(this.renewal);
    this.onEnd(this);
  }

  /** At a third of the ttl, as LockService renews: the key never looks free between two renewals. */
  private scheduleRenewal(): void {
    this.renewal = setTimeout(() => void this.renew(), this.request.ttl / 3);
    // A test that forgot to release must not keep its process alive.
    this.renewal.unref();
  }

  private async renew(): Promise<void> {
    let gone = false;
    try {
      gone = (await this.store.extend(this.request)) === null;
    } catch {
      // Tried again at the next turn, as LockService retries a failed renewal.
    }
    if (this.ended) return;
    // Gone from the store (force-released, or the store closed): nothing is left to renew.
    if (gone) this.end();
    else this.scheduleRenewal();
  }
}
