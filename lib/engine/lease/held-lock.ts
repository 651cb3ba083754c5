// The Lock handle a caller gets, over its call's grant and any leases borrowed from its async context (reentrancy).
import { LockLostError } from '../../errors/lock-lost.error';
import { leaseLength } from '../../options/validators';
import type { Lock } from '../../lock.interface';
import type { Lease } from './lease';
import { checkedOnRead } from './read-checked-signal';

/**
 * Node registers the dispose symbol as Symbol.for('nodejs.asyncDispose'); realms without the
 * well-known symbol (Jest's sandbox on Node 20) still find it under that name.
 */
export const asyncDispose: typeof Symbol.asyncDispose =
  Symbol.asyncDispose ?? (Symbol.for('nodejs.asyncDispose') as typeof Symbol.asyncDispose);

/** Node's util.inspect, which prints a logged object, calls a method under this symbol when an object has one. */
const inspectCustom = Symbol.for('nodejs.util.inspect.custom');

/**
 * The Lock handle a caller gets. It holds one lease it was granted, and, under reentrancy, leases its
 * async context already held for some of the keys (borrowed: counted, so an inner release does not end
 * the outer holder's lease).
 */
export class HeldLock implements Lock {
  readonly keys: readonly string[];
  private fencesByKey: Readonly<Record<string, number>> | undefined;
  private released = false;
  private combined: CombinedSignal | undefined;

  constructor(
    keys: readonly string[],
    /** The leases behind this handle; the grant of this call, if any, comes last. */
    readonly leases: readonly Lease[],
    private readonly onRelease: (lease: Lease) => Promise<boolean>,
  ) {
    this.keys = keys;
  }

  /** Made on first read: most locks are released without anyone reading their fences. */
  get fences(): Readonly<Record<string, number>> {
    if (!this.fencesByKey) {
      // No prototype: a key named "__proto__" is a key like any other.
      const fences: Record<string, number> = Object.create(null) as Record<string, number>;
      for (const lease of this.leases) {
        lease.terms.names.forEach((name, index) => (fences[name.name] = lease.terms.fences[index]));
      }
      this.fencesByKey = Object.freeze(fences);
    }
    return this.fencesByKey;
  }

  get token(): string {
    return this.leases[this.leases.length - 1].token;
  }

  /** The token of the grant `key` (as given) is held under: an outer lease's for a key this handle borrowed. */
  tokenOf(key: string): string | undefined {
    for (let at = this.leases.length - 1; at >= 0; at--) {
      if (this.leases[at].terms.names.some((name) => name.name === key)) return this.leases[at].token;
    }
    return undefined;
  }

  get fence(): number {
    // The first key's fence, without building the record: as in the record, the last lease naming it wins
    // (this handle's own grant comes last).
    const key = this.keys[0];
    for (let at = this.leases.length - 1; at >= 0; at--) {
      const { names, fences } = this.leases[at].terms;
      for (let index = names.length - 1; index >= 0; index--) if (names[index].name === key) return fences[index];
    }
    return this.fences[key];
  }

  get signal(): AbortSignal {
    if (this.leases.length === 1) return this.leases[0].signal;
    // First read after release (a `finally` logging it): a combined signal made now would listen on the
    // outer lease for as long as that is held, with nothing left to detach it. This handle's own grant (the
    // last lease) tells what became of it.
    if (this.released && !this.combined) return this.leases[this.leases.length - 1].signal;
    this.combined ??= new CombinedSignal(this.leases.map((lease) => lease.signal));
    return this.combined.signal;
  }

  /** True while every lease behind this handle is held. */
  get isHeld(): boolean {
    return !this.released && this.leases.every((lease) => lease.isHeld);
  }

  async extend(ttl?: number): Promise<void> {
    // Checked here: Redis would read a ttl below 1 ms as "expire now" (a silent release), NaN or Infinity
    // as a script error that says nothing of the caller's mistake, and a few ms leaves no validity.
    if (ttl !== undefined) leaseLength('ttl', ttl, false);
    // A reentrant handle borrows its context's outer lease: once this handle is released, extending through
    // it would renew a lease its caller no longer holds (and that the outer holder may be about to let go).
    if (this.released) throw new LockLostError(this.keys, 'this handle was already released');
    await Promise.all(this.leases.map((lease) => lease.extend(ttl ?? lease.terms.ttl)));
  }

  release(): Promise<boolean> {
    if (this.released) return Promise.resolve(false);
    this.released = true;
    // A borrowed lease (reentrancy) may outlive this handle by far: it must not keep this handle's
    // listener, and through it this handle, alive.
    this.combined?.detach();
    // No async layer of its own on the hot path (one lease): the lease's release is the answer.
    if (this.leases.length === 1) return this.onRelease(this.leases[0]);
    return Promise.all(this.leases.map((lease) => this.onRelease(lease))).then((results) => results.every(Boolean));
  }

  /**
   * `await using`: releases as withLock does, a failure (Redis unreachable) logged instead of thrown. The block's
   * own error or result stands: thrown here, the failure would replace a successful block's result, or wrap the
   * block's own error in a SuppressedError. The lease, no longer renewed, expires on its own. Every lease of a
   * handle has the same owner (reentrancy never crosses services).
   */
  [asyncDispose](): Promise<void> {
    // Released in the block already (release() is idempotent): nothing to do, and nothing to warn of.
    if (this.released) return Promise.resolve();
    return this.leases[this.leases.length - 1].owner.releaseQuietly(this);
  }

  /**
   * What util.inspect shows (a lock printed to a log): the lock as its holder knows it, not the leases, service and
   * timers behind it (a log line of several screens). The token is shortened: enough to match it in a log.
   */
  [inspectCustom](): object {
    return { keys: this.keys, fence: this.fence, token: `${this.token.slice(0, 8)}…`, held: this.isHeld };
  }
}

/**
 * Aborts when any of `sources` aborts, with its reason. In place of AbortSignal.any, whose dependent
 * signals stay referenced by their sources until those abort: an outer lease held for long, read by many
 * reentrant handles, would keep every one of them. Here a released handle detaches its listeners.
 */
class CombinedSignal {
  private readonly controller = new AbortController();
  private readonly onAbort = (event: Event): void => {
    this.detach();
    this.controller.abort((event.target as AbortSignal).reason);
  };

  constructor(private readonly sources: readonly AbortSignal[]) {
    const aborted = sources.find((source) => source.aborted);
    if (aborted) {
      this.controller.abort(aborted.reason);
      return;
    }
    for (const source of sources) source.addEventListener('abort', this.onAbort, { once: true });
    // Reading a source checks its lease's validity, and its abort reaches this signal through onAbort.
    checkedOnRead(this.controller.signal, () => void sources.some((source) => source.aborted));
  }

  get signal(): AbortSignal {
    return this.controller.signal;
  }

  detach(): void {
    for (const source of this.sources) source.removeEventListener('abort', this.onAbort);
  }
}
