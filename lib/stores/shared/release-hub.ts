// Turns release announcements into wake-ups: one subscription per key and process, one waiter woken per release.
import type { LockKeyNames, ReleaseWatch } from '../lock-store.interface';
import { HubWatch } from './hub-watch';
import { type ChannelState, type HandoverClaim, recentRelease } from './release-channel';

/** How a store learns of releases: subscribe to a channel, stop listening to it. */
export interface ReleaseTransport {
  /** Resolves once messages published on the channel from now on will be delivered to `hub.announce`. */
  subscribe(channel: string): Promise<void>;
  unsubscribe(channel: string): Promise<void>;
}

/**
 * How many releases in a row may go straight to a waiter of this process. Past that, one release wakes
 * nobody here directly: this process's waiter and other processes' waiters all learn of it from the
 * published message and race fairly, so a busy process cannot keep a key from the others indefinitely.
 */
const MAX_LOCAL_HANDOVERS = 3;

/** How many recent release tokens a channel remembers to count each release once. */
const RECENT_TOKENS = 64;
/**
 * Turns release announcements into wake-ups, so waiters sleep instead of polling. Waiters of one process
 * share one subscription per key, and a release wakes only the longest-waiting one: the others would only
 * lose the race again, so waking them would cost a Redis command each (a thundering herd). A subscription
 * outlives its last waiter by a short linger, so a hot key does not SUBSCRIBE/UNSUBSCRIBE on every wait.
 */
export class ReleaseHub {
  private readonly channels = new Map<string, ChannelState>();

  constructor(
    private readonly transport: ReleaseTransport,
    private readonly lingerMs = 2_000,
  ) {}

  /**
   * Called by the transport for every release message; `token` is the releasing grant's token. A release
   * this process did not hand over locally (another process's, as a rule) ends the local streak: the
   * hand-over budget is "MAX_LOCAL_HANDOVERS in a row", not "that many of every MAX + 1".
   */
  announce(channel: string, token?: string): void {
    const state = this.channels.get(channel);
    if (!state) return;
    if (this.count(state, token)) state.localStreak = 0;
  }

  /**
   * Counts a release once (see ChannelState.recent) and wakes the next sleeper; false for a repeat. A repeat is
   * another node having applied that release (Redlock): it wakes a waiter those nodes refused for it
   * (see Sleeper.blockedBy), none other.
   */
  private count(state: ChannelState, token: string | undefined): boolean {
    state.heard++;
    if (token !== undefined && token !== '') {
      const known = recentRelease(state, token);
      if (known) {
        known.heard = state.heard;
        this.wakeBlocked(state, token);
        return false;
      }
      state.recent.push({ token, counted: state.releases + 1, heard: state.heard });
      if (state.recent.length > RECENT_TOKENS) state.recent.shift();
    }
    state.releases++;
    this.wakeNext(state);
    return true;
  }

  /** Wakes the longest-waiting sleeper blocked by `token` (see Sleeper.blockedBy), if any. */
  private wakeBlocked(state: ChannelState, token: string): void {
    for (const sleeper of state.sleepers) {
      if (sleeper.blockedBy?.includes(token)) {
        sleeper.wake();
        return;
      }
    }
  }

  /**
   * Called by a store right after it has sent a release of this process: wakes the next local waiter at
   * once, so its attempt follows the release on the same connection (a handover in one round trip). The
   * published message of the same release then carries the same token and is not counted twice. Every
   * MAX_LOCAL_HANDOVERS-th release is left to the published message instead.
   */
  handOver(channel: string, token: string): void {
    const state = this.channels.get(channel);
    if (!state || state.sleepers.length === 0) return;
    if (state.localStreak >= MAX_LOCAL_HANDOVERS) {
      state.localStreak = 0;
      return;
    }
    state.localStreak++;
    this.count(state, token);
  }

  /**
   * Called by a store about to release a single-key mutex: claims the longest-waiting sleeper of the
   * channel for a direct hand-over, when it offered one (a single-key mutex waiter still wanting the lock)
   * and the local hand-over budget allows (see MAX_LOCAL_HANDOVERS). The store then releases and grants in
   * one step, and settles the claim. undefined: release as usual (and call handOver).
   * Not counted as a release: the key never comes free, so no other waiter has reason to attempt.
   */
  claim(channel: string): HandoverClaim | undefined {
    const state = this.channels.get(channel);
    const sleeper = state?.sleepers[0];
    if (!state || !sleeper?.claim || sleeper.span !== 1 || state.localStreak >= MAX_LOCAL_HANDOVERS) return undefined;
    const claimed = sleeper.claim();
    if (claimed) state.localStreak++;
    return claimed;
  }

  /**
   * Called by a store that learned no other process listens on the channel (see RedisLockStore.handOver):
   * the local hand-over streak restarts, since holding releases back for others would help nobody.
   */
  nobodyElseWaits(channel: string): void {
    const state = this.channels.get(channel);
    if (state) state.localStreak = 0;
  }

  /**
   * Whether callers of this process wait for a release of one of the keys (an open watch): a release of this
   * process then asks to be announced whether or not the key is marked awaited, since a caller may sleep
   * without having attempted (a newcomer queued behind the sleepers), and every MAX_LOCAL_HANDOVERS-th release
   * wakes the local waiters through its announcement only (see handOver).
   */
  watched(keys: readonly LockKeyNames[]): boolean {
    for (const key of keys) if ((this.channels.get(key.channel)?.watchers ?? 0) > 0) return true;
    return false;
  }

  /** Whether single-key waiters of this process sleep on one of the keys (multi-key ones may be blocked elsewhere). */
  hasSleepers(keys: readonly LockKeyNames[]): boolean {
    for (const key of keys) {
      if (this.channels.get(key.channel)?.sleepers.some((sleeper) => sleeper.span === 1)) return true;
    }
    return false;
  }

  /**
   * @internal Wakes the longest-waiting sleeper of the channel; a waiter for several keys may still be
   * blocked by another key, so waking goes on until a single-key waiter (or nobody) is woken: a multi-key
   * waiter never swallows the wake-up of a waiter that only needs this key. A wake-up (a release's, or one
   * passed on) that reaches no single-key waiter is kept as unclaimed, for a waiter refused meanwhile to take
   * (see ChannelState.unclaimed).
   */
  wakeNext(state: ChannelState): void {
    for (let sleeper = state.sleepers.shift(); sleeper; sleeper = state.sleepers.shift()) {
      sleeper.wake();
      if (sleeper.span === 1) return;
    }
    state.unclaimed.push(state.releases);
    if (state.unclaimed.length > RECENT_TOKENS) state.unclaimed.shift();
  }

  watch(keys: readonly LockKeyNames[]): ReleaseWatch {
    const states = keys.map((key) => this.open(key.channel));
    return new HubWatch(
      this,
      states,
      keys.map((key) => key.channel),
    );
  }

  /** @internal */
  ready(channel: string, state: ChannelState): Promise<void> {
    if (!state.subscribed) {
      state.subscribed = this.transport.subscribe(channel).catch((error: unknown) => {
        state.subscribed = undefined;
        // Part of it may have happened (a Redlock node that did subscribe, a late answer): undo it, or the
        // channel would stay subscribed with nobody left to unsubscribe it.
        this.transport.unsubscribe(channel).catch(() => undefined);
        throw error;
      });
    }
    return state.subscribed;
  }

  /** @internal */
  closeChannel(channel: string, state: ChannelState): void {
    if (--state.watchers > 0) return;
    if (!state.subscribed) {
      this.channels.delete(channel);
      return;
    }
    state.lingerTimer = setTimeout(() => {
      if (state.watchers > 0) return;
      this.channels.delete(channel);
      this.transport.unsubscribe(channel).catch(() => undefined);
    }, this.lingerMs);
    state.lingerTimer.unref();
  }

  /** Wakes every sleeping waiter, each to look again (at shutdown: to find itself refused). */
  wakeAll(): void {
    for (const state of this.channels.values()) for (const sleeper of state.sleepers.splice(0)) sleeper.wake();
  }

  /** Forgets every channel (shutdown); sleeping waiters are woken to find the store closed. */
  clear(): void {
    for (const state of this.channels.values()) {
      if (state.lingerTimer) clearTimeout(state.lingerTimer);
      for (const sleeper of state.sleepers.splice(0)) sleeper.wake();
    }
    this.channels.clear();
  }

  private open(channel: string): ChannelState {
    let state = this.channels.get(channel);
    if (!state) {
      state = {
        releases: 0,
        heard: 0,
        recent: [],
        unclaimed: [],
        watchers: 0,
        sleepers: [],
        subscribed: undefined,
        lingerTimer: undefined,
        localStreak: 0,
      };
      this.channels.set(channel, state);
    }
    if (state.lingerTimer) {
      clearTimeout(state.lingerTimer);
      state.lingerTimer = undefined;
    }
    state.watchers++;
    return state;
  }
}
