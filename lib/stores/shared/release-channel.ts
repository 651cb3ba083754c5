// What the release hub keeps per channel: its waiters asleep, and the releases it counted lately.
import type { AcquireGrant } from '../lock-store.interface';

/**
 * A waiter a release of this process has claimed for a direct hand-over (see ReleaseHub.claim). The store
 * must settle it exactly once: `grant` when the lock went to `token`, `decline` otherwise (the waiter then
 * attempts itself; a hand-over the store could not vouch for is taken back first).
 */
export interface HandoverClaim {
  /** The waiter's lease value. */
  readonly token: string;
  /** The waiter's lease length (ms). */
  readonly ttl: number;
  grant(outcome: AcquireGrant): void;
  decline(): void;
}

/** A waiter asleep on one or more channels until a release wakes it. */
export interface Sleeper {
  wake(): void;
  /**
   * Set when the waiter takes a direct hand-over (it made a HandoverOffer): if it still accepts one, takes
   * it off its timer and signal, for a hand-over the store will settle; undefined when it no longer does.
   */
  readonly claim: (() => HandoverClaim | undefined) | undefined;
  /** How many channels the sleeper waits on: a multi-key waiter may still be blocked by another key. */
  readonly span: number;
  /** Woken before the others: a writer queued behind readers (new readers wait behind it anyway). */
  readonly first: boolean;
  /**
   * Asleep without a lease end to wake at (a newcomer queued behind this process's sleepers without an
   * attempt): its timer is its wait, so it counts on the sleepers ahead of it, and whoever of them gets in
   * hands it the lease end it was watching (see HubWatch.close).
   */
  blind: boolean;
  /** Takes over a lease end to watch (a time on performance.now()'s clock): woken then at the latest. */
  watchLeaseEnd(at: number): void;
  /**
   * Grants whose release was already counted but which refused this waiter's last attempt (see
   * HubWatch.next): nodes still applying that release. Another node's announcement of it, a repeat that is
   * not counted, wakes this waiter.
   */
  readonly blockedBy: readonly string[] | undefined;
}

/** A release counted lately on a channel (see ChannelState.recent). */
export interface RecentRelease {
  readonly token: string;
  /** The value `releases` took when it was counted (see HubWatch.releasedSince). */
  readonly counted: number;
  /** The value `heard` took at its latest announcement, a repeat or not. */
  heard: number;
}

/** What the hub knows of one release channel (one lock key). */
export interface ChannelState {
  /** Releases announced on this channel so far. */
  releases: number;
  /** Announcements heard on this channel so far, repeats of a counted release included. */
  heard: number;
  /**
   * The releases counted lately, oldest first: one release reaches the hub several times (the local
   * hand-over, then its PUBLISH; on Redlock one PUBLISH per node), possibly after later releases, and must
   * be counted once. A window, not just the last token: with a hot key, other releases come between a
   * hand-over and its own PUBLISH.
   */
  readonly recent: RecentRelease[];
  /**
   * The wake-ups lately that reached no sleeper (nobody slept: the waiters' attempts were in flight), a release's
   * or one passed on, as the values `releases` had then, oldest first: each is for one of the waiters refused
   * meanwhile to attempt again for (see HubWatch.releasedSince). A release that woke a sleeper is that sleeper's.
   */
  readonly unclaimed: number[];
  watchers: number;
  /** Waiters asleep on this channel, in arrival order: a release wakes the first one only. */
  readonly sleepers: Sleeper[];
  subscribed: Promise<void> | undefined;
  lingerTimer: NodeJS.Timeout | undefined;
  /** Releases in a row handed straight to a waiter of this process (see ReleaseHub.handOver). */
  localStreak: number;
}

/** The release of `token` if the channel's window still holds it. */
export function recentRelease(state: ChannelState, token: string): RecentRelease | undefined {
  for (const release of state.recent) if (release.token === token) return release;
  return undefined;
}
