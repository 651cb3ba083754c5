/**
 * One acquisition call while the engine works on it (acquisition.ts): what it asks for, what its observer
 * needs, and the hand-over it offers releases of this process while it sleeps.
 */
import type { InFlight } from './lease/in-flight';
import type { CallSettings } from '../options/call-settings';
import type { OtelSpan } from '../observability/otel-api';
import type { HandoverOffer, LockKeyNames } from '../stores/lock-store.interface';

/**
 * One acquisition call that needs a grant: what it asks for, and for its observer when it started and its
 * wait span once it had to wait.
 */
export interface Attempt {
  /** The Redis names of the keys this call must be granted (those reentrancy did not cover). */
  readonly names: readonly LockKeyNames[];
  /** The lease value the grant is made to (token and instance). */
  readonly value: string;
  readonly settings: CallSettings;
  /** Every key of the call, as the caller gave them (for errors and events). */
  readonly keys: readonly string[];
  /** tryAcquire: a single attempt. */
  readonly once: boolean;
  readonly startedAt: number;
  span: OtelSpan | undefined;
  /**
   * Set once a release of this process claimed the caller for a direct hand-over: ends the hand-over's
   * in-flight count, called once the call has dealt with what came of it (see HandoverOffer.claimed).
   */
  handoverDealtWith?: () => void;
}

/**
 * What a sleeping single-key mutex caller offers a release of this process: to be handed the lock
 * directly (see HandoverOffer), as long as the service is not shutting down (a cancelled caller has
 * already left the queue). From a claim until the call has dealt with its outcome, the hand-over counts
 * as in flight.
 */
export function handoverOffer(
  attempt: Attempt,
  ttl: number,
  closed: () => boolean,
  inFlight: InFlight,
): HandoverOffer | undefined {
  const shape = attempt.settings.shape;
  if (attempt.names.length !== 1 || (shape !== undefined && shape.kind !== 'mutex')) return undefined;
  return {
    token: attempt.value,
    ttl,
    accepts: () => !closed(),
    claimed: () => {
      if (attempt.handoverDealtWith) return;
      void inFlight.track(
        new Promise<void>((resolve) => {
          attempt.handoverDealtWith = resolve;
        }),
      );
    },
    // Back to attempting (and maybe sleeping) like any waiter: shutdown must not wait on it.
    declined: () => {
      attempt.handoverDealtWith?.();
      attempt.handoverDealtWith = undefined;
    },
  };
}
