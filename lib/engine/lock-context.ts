// Which locks the current async context holds, for current() and reentrancy; shared by every LockService.
import { AsyncLocalStorage } from 'node:async_hooks';
import type { HeldLock } from './lease/held-lock';
import type { Lease } from './lease/lease';

/** One level of locks held by an async context: innermost first, each pointing at the one around it. */
interface LockFrame {
  readonly lock: HeldLock;
  readonly outer: LockFrame | undefined;
}

/**
 * Which locks the current async context holds (inside withLock or a @Locked method), for current() and
 * for reentrancy. Shared by every LockService of the process: a context holds what it holds.
 */
export class LockContext {
  private readonly storage = new AsyncLocalStorage<LockFrame>();

  run<T>(lock: HeldLock, fn: () => T): T {
    return this.storage.run({ lock, outer: this.storage.getStore() }, fn);
  }

  current(): HeldLock | undefined {
    return this.storage.getStore()?.lock;
  }

  /** The still-held lease of this context that covers `key`, innermost first. */
  leaseFor(key: string, owner: object): Lease | undefined {
    for (let frame = this.storage.getStore(); frame; frame = frame.outer) {
      for (const lease of frame.lock.leases) {
        // isHeld last: it declares a lease past its validity lost (its signal aborts), and only this
        // context's leases of this service for this key are its business.
        if (lease.owner === owner && lease.keys.includes(key) && lease.isHeld) return lease;
      }
    }
    return undefined;
  }
}
