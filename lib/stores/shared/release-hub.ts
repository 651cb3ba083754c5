import type { AcquireGrant, HandoverOffer, LockKeyNames, ReleaseWatch } from '../lock-store.interface';

/** How a store learns of releases: subscribe to a channel, stop listening to it. */
export interface ReleaseTransport {
  /** Resolves once messages published on the channel from now on will be delivered to `hub.announce`. */
  subscribe(channel: string): Promise<void>;
  unsubscribe(channel: string): Promise<void>;
}

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

interface Sleeper {
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
   * Grants whose release was already counted but which refused this waiter's last attempt (see
   * HubWatch.next): nodes still applying that release. Another node's announcement of it, a repeat that is
   * not counted, wakes this waiter.
   */
  readonly blockedBy: readonly string[] | undefined;
}

/** A release counted lately on a channel (see ChannelState.recent). */
interface RecentRelease {
  readonly token: string;
  /** The value `releases` took when it was counted (see HubWatch.releasedSince). */
  readonly counted: number;
  /** The value `heard` took at its latest announcement, a repeat or not. */
  heard: number;
}

interface ChannelState {
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
  watchers: number;
  /** Waiters asleep on this channel, in arrival order: a release wakes the first one only. */
  readonly sleepers: Sleeper[];
  subscribed: Promise<void> | undefined;
  lingerTimer: NodeJS.Timeout | undefined;
  /** Releases in a row handed straight to a waiter of this process (see handOver). */
  localStreak: number;
}

/**
 * How many releases in a row may go straight to a waiter of this process. Past that, one release wakes
 * nobody here directly: this process's waiter and other processes' waiters all learn of it from the
 * published message and race fairly, so a busy process cannot keep a key from the others indefinitely.
 */
const MAX_LOCAL_HANDOVERS = 3;

/** How many recent release tokens a channel remembers to count each release once. */
const RECENT_TOKENS = 64;

/** The release of `token` if the channel's window still holds it. */
function recentRelease(state: ChannelState, token: string): RecentRelease | undefined {
  for (const release of state.recent) if (release.token === token) return release;
  return undefined;
}

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
   * waiter never swallows the wake-up of a waiter that only needs this key.
   */
  wakeNext(state: ChannelState): void {
    for (let sleeper = state.sleepers.shift(); sleeper; sleeper = state.sleepers.shift()) {
      sleeper.wake();
      if (sleeper.span === 1) return;
    }
  }

  watch(keys: readonly LockKeyNames[]): ReleaseWatch {
    const states = keys.map((key) => this.open(key.channel));
    return new HubWatch(this, states, keys.map((key) => key.channel));
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

class HubWatch implements ReleaseWatch {
  private closed = false;
  /** Woken by a release and not yet gone back to attempt. */
  private unusedWake = false;
  /** The announcements heard on the (single) watched key when `seen` was last read (see releasedSince). */
  private heardMark = 0;

  constructor(
    private readonly hub: ReleaseHub,
    private readonly states: ChannelState[],
    private readonly channels: string[],
  ) {}

  get seen(): number {
    this.unusedWake = false;
    this.heardMark = this.states[0]?.heard ?? 0;
    let total = 0;
    for (const state of this.states) total += state.releases;
    return total;
  }

  releasedSince(mark: number, refusedBy: readonly string[] | undefined): boolean {
    let total = 0;
    for (const state of this.states) total += state.releases;
    if (!refusedBy || this.states.length !== 1) return total !== mark;
    const state = this.states[0];
    let named = 0;
    for (let i = state.recent.length - 1; i >= 0 && state.recent[i].counted > mark; i--) {
      if (refusedBy.includes(state.recent[i].token)) return true;
      named++;
    }
    // Releases without a token, or more than the window remembers: they may have been of a refusing grant.
    if (named < total - mark) return true;
    // A refusing grant whose release was counted before the attempt, announced again since by another node
    // (a repeat, not counted): that node had not applied the release when the attempt reached it, and has now.
    return refusedBy.some((token) => (recentRelease(state, token)?.heard ?? 0) > this.heardMark);
  }

  async ready(): Promise<void> {
    await Promise.all(this.states.map((state, index) => this.hub.ready(this.channels[index], state)));
  }

  next(
    timeoutMs: number,
    signal?: AbortSignal,
    first = false,
    offer?: HandoverOffer,
    refusedBy?: readonly string[],
  ): Promise<AcquireGrant | undefined> {
    if (signal?.aborted) return Promise.reject(signal.reason);
    const blockedBy = this.releasedAlready(refusedBy);
    return new Promise<AcquireGrant | undefined>((resolve, reject) => {
      const sleeper: Sleeper = {
        span: this.states.length,
        first,
        blockedBy,
        wake: () => {
          this.unusedWake = true;
          finish();
        },
        claim:
          offer &&
          ((): HandoverClaim | undefined => {
            if (!offer.accepts()) return undefined;
            // Committed to the hand-over: its answer, not the timer or the signal, ends this sleep (the
            // service releases a grant that came after the signal aborted).
            disarm();
            offer.claimed();
            return {
              token: offer.token,
              ttl: offer.ttl,
              grant: (outcome) => resolve(outcome),
              decline: () => {
                offer.declined();
                this.unusedWake = true;
                resolve(undefined);
              },
            };
          }),
      };
      const onAbort = (): void => finish(signal?.reason);
      const timer = setTimeout(() => finish(), Math.max(0, timeoutMs));
      const disarm = (): void => {
        clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
        for (const state of this.states) {
          const index = state.sleepers.indexOf(sleeper);
          if (index >= 0) state.sleepers.splice(index, 1);
        }
      };
      const finish = (error?: unknown): void => {
        disarm();
        if (error === undefined) resolve(undefined);
        // eslint-disable-next-line @typescript-eslint/prefer-promise-reject-errors -- the abort reason, as is
        else reject(error);
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      for (const state of this.states) {
        // A writer queued behind readers goes ahead of the readers (and of other writers not yet queued):
        // every reader's release must reach it, or the last one may wake a reader that is refused anyway.
        const at = first ? state.sleepers.findIndex((other) => !other.first) : -1;
        if (at >= 0) state.sleepers.splice(at, 0, sleeper);
        else state.sleepers.push(sleeper);
      }
    });
  }

  /**
   * Of the grants that refused the last attempt, those whose release this watch has already counted (the
   * refusing nodes had not applied it yet), or undefined: only those make a repeat announcement wake the
   * waiter. A grant not released yet wakes it with its first announcement as usual, and its repeats (one per
   * node) must not wake more waiters, who would only attempt in step.
   */
  private releasedAlready(refusedBy: readonly string[] | undefined): readonly string[] | undefined {
    if (!refusedBy || this.states.length !== 1) return undefined;
    const state = this.states[0];
    const released = refusedBy.filter((token) => recentRelease(state, token) !== undefined);
    return released.length > 0 ? released : undefined;
  }

  close(acquired = true, passOn = false): void {
    if (this.closed) return;
    this.closed = true;
    // A waiter that leaves without the lock (its wait ran out, it was cancelled, it failed) passes its turn
    // on: a waiter queued behind it may have slept without a timer of its own for the holder's lease end
    // (a newcomer queues behind the sleepers without an attempt), and must look again now. So does one that
    // got in and left room for more (readers after a writer, several permits freed at once).
    if (this.unusedWake || !acquired || passOn) for (const state of this.states) this.hub.wakeNext(state);
    this.states.forEach((state, index) => this.hub.closeChannel(this.channels[index], state));
  }
}
