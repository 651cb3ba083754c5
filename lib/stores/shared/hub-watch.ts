// One waiter's watch of its keys on the release hub: when a release wakes it, or a hand-over makes it the holder.
import type { AcquireGrant, HandoverOffer, ReleaseWatch, WatchLeaving, WatchRefusal } from '../lock-store.interface';
import { type ChannelState, type HandoverClaim, type Sleeper, recentRelease } from './release-channel';
import type { ReleaseHub } from './release-hub';

/**
 * A waiter's watch of its keys (ReleaseHub.watch): `seen` marks the releases counted so far, next() sleeps until
 * a release of one of the keys (or a hand-over, or the timeout), close() passes an unused wake-up on.
 */
export class HubWatch implements ReleaseWatch {
  private closed = false;
  /** Woken by a release and not yet gone back to attempt. */
  private unusedWake = false;
  /** The announcements heard on the (single) watched key when `seen` was last read (see releasedSince). */
  private heardMark = 0;
  /** `seen` was read, i.e. the waiter attempted while watching, and so read a lease end (see Sleeper.blind). */
  private attempted = false;
  /** The last sleep was blind: the next one takes the place this waiter had, at the head (see next). */
  private wasBlind = false;
  /**
   * When this waiter's timer was to wake it to read a lease end again (performance.now()'s clock): set by a sleep
   * after an attempt, or handed over by a waiter ahead that got in (see close).
   */
  private leaseEndAt: number | undefined;

  constructor(
    private readonly hub: ReleaseHub,
    private readonly states: ChannelState[],
    private readonly channels: string[],
  ) {}

  get seen(): number {
    this.unusedWake = false;
    this.attempted = true;
    this.heardMark = this.states[0]?.heard ?? 0;
    let total = 0;
    for (const state of this.states) total += state.releases;
    return total;
  }

  releasedSince(mark: number, { refusedBy, queued }: WatchRefusal): boolean {
    let total = 0;
    for (const state of this.states) total += state.releases;
    if (this.states.length !== 1) return total !== mark;
    const state = this.states[0];
    if (!refusedBy) return queued === true ? total !== mark : this.takeUnclaimed(state, mark);
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

  /**
   * Takes one of the releases counted since `mark` that woke no sleeper (see ChannelState.unclaimed): true
   * when there was one. Each release goes to one waiter: the sleeper it woke, or else one of the waiters
   * refused while it was counted. Were every refused waiter to attempt again for it, they would attempt in
   * step, all but one refused, for every grant of a busy key.
   */
  private takeUnclaimed(state: ChannelState, mark: number): boolean {
    const index = state.unclaimed.findIndex((counted) => counted > mark);
    if (index < 0) return false;
    state.unclaimed.splice(index, 1);
    return true;
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
    const blind = !this.attempted;
    // A blind sleeper woken to read a lease end was at the head of the queue: it sleeps again there.
    const ahead = first || this.wasBlind;
    this.wasBlind = blind;
    return new Promise<AcquireGrant | undefined>((resolve, reject) => {
      let firesAt = performance.now() + Math.max(0, timeoutMs);
      if (!blind) this.leaseEndAt = firesAt;
      const sleeper: Sleeper = {
        span: this.states.length,
        first,
        blind,
        blockedBy,
        wake: () => {
          this.unusedWake = true;
          finish();
        },
        watchLeaseEnd: (at) => {
          sleeper.blind = false;
          this.leaseEndAt = at;
          if (at >= firesAt) return;
          firesAt = at;
          clearTimeout(timer);
          timer = setTimeout(() => finish(), Math.max(0, at - performance.now()));
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
      let timer = setTimeout(() => finish(), Math.max(0, timeoutMs));
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
        const at = ahead ? state.sleepers.findIndex((other) => !other.first) : -1;
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

  close({ acquired = true, roomLeft = false, alone = true }: WatchLeaving = {}): void {
    if (this.closed) return;
    this.closed = true;
    // A waiter that leaves without the lock (its wait ran out, it was cancelled, it failed) passes its turn
    // on, and so does one that got in and left room for more (readers after a writer, several permits freed
    // at once). One that got in a permit or as a reader hands the lease end it watched to a blind sleeper
    // (see Sleeper.blind) at the head: the key's other holders may expire, unannounced, while it holds its
    // permit, and no timer but the one it hands over would wake the sleepers then. Handed over, not woken: a
    // waiter woken now would only read the lease end again, one refused attempt for every grant of a busy
    // key. One that watched no lease end (it never read one, nor was handed one) wakes the blind sleeper to
    // read one: a sleeper ahead that watched one may have left, cancelled, with nothing to hand over. One
    // that holds the key alone wakes a blind sleeper by its own release.
    const passOn = this.unusedWake || !acquired || roomLeft;
    for (const state of this.states) {
      const head = state.sleepers[0];
      if (passOn) this.hub.wakeNext(state);
      else if (!alone && head?.blind) {
        if (this.leaseEndAt !== undefined) head.watchLeaseEnd(this.leaseEndAt);
        else this.hub.wakeNext(state);
      }
    }
    this.states.forEach((state, index) => this.hub.closeChannel(this.channels[index], state));
  }
}
