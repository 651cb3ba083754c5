/**
 * One leadership's campaign (LockService.lead, @Leader): wins the leadership's lock, runs the user's function
 * for the term, resigns when it returns, and campaigns again until stopped. Built on the lock engine: the
 * lease, its renewal and lost-lock signal, waiting without polling, and the grant's fence as the term.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import type { Logger } from '@nestjs/common';
import { LockLostError, LockUnavailableError } from '../../errors';
import { safeMessage } from '../../errors/safe-cause';
import type { Lock } from '../../lock.interface';
import type { AcquireOptions } from '../../options/lock-options.interface';
import { leaderKey } from '../../keys';
import type { LeaderSettings } from '../../options/leader-options';
import type { LockObserver } from '../../observability/lock-observer';
import { checkedOnRead } from '../lease/read-checked-signal';
import type { LeaderDeposedReason, Leadership, LeaderTerm } from './leader.interface';

/** What a campaign needs from the service that runs it. */
export interface CampaignHost {
  readonly logger: Logger;
  readonly instance: string;
  readonly observer: LockObserver;
  /** LockService.acquire, allowed the leaderships' namespace (which acquire() refuses). */
  acquire(key: string, options: AcquireOptions): Promise<Lock>;
  /** Runs `fn` with `lock` as its async context's current lock. */
  runWithLock<T>(lock: Lock, fn: () => T): T;
  /** Releases, logging a failure instead of throwing it. */
  releaseQuietly(lock: Lock): Promise<void>;
  /** Whether the service is shutting down: nothing is campaigned for from then on. */
  closed(): boolean;
  /** The campaign has ended for good. */
  ended(campaign: Campaign): void;
}

/** The user's work for one term: it should return (or throw) once `term.signal` aborts. */
export type LeaderFunction = (term: LeaderTerm) => unknown;

/** The term whose `fn` the current async context runs (inside it, stop() must not wait for that `fn`). */
const serving = new AsyncLocalStorage<Office>();

/** The term under way. */
interface Office {
  readonly term: LeaderTerm;
  readonly lock: Lock;
  readonly controller: AbortController;
  readonly electedAt: number;
  deposed: boolean;
}

/**
 * The campaign loop. Waiting for the leadership is an acquire with no time limit, woken by the leader's
 * release announcement (no polling) or, when the leader vanished without releasing, at its lease's expiry.
 *
 * The yield: a leader whose `fn` returned resigns (its release wakes the instances waiting), then waits
 * `yieldFor` before it campaigns again. A waiter woken by the release attempts within about a round trip, so
 * it wins; with nobody waiting, the leader that resigned takes the leadership back after the pause. The same
 * pause keeps an `fn` that fails at once from spinning.
 */
export class Campaign implements Leadership {
  readonly key: string;
  private readonly stopping = new AbortController();
  private stopReason: Exclude<LeaderDeposedReason, 'lost'> | undefined;
  private office: Office | undefined;
  private readonly done: Promise<void>;
  /** The pause after resigning, and between attempts while the store is unreachable. */
  private readonly yieldFor: number;

  constructor(
    private readonly host: CampaignHost,
    readonly name: string,
    private readonly fn: LeaderFunction,
    private readonly settings: LeaderSettings,
  ) {
    this.key = leaderKey(name);
    this.yieldFor = Math.min(settings.ttl / 2, 1_000);
    // Never rejects: a term's failures are logged and the loop goes on until stopped; anything else that
    // escapes it (a logger or telemetry exporter that throws) is logged here, never an unhandled rejection.
    this.done = this.campaign()
      .catch((error: unknown) =>
        this.host.logger.error(`The campaign for leadership "${name}" stopped: ${safeMessage(error)}`),
      )
      .finally(() => this.host.ended(this));
  }

  get isLeader(): boolean {
    const office = this.office;
    // The signal is read-checked: a leader past its lease's validity reads false, before any timer has run.
    return office !== undefined && !office.deposed && !office.term.signal.aborted;
  }

  get term(): LeaderTerm | undefined {
    return this.isLeader ? this.office?.term : undefined;
  }

  stop(): Promise<void> {
    return this.end('resigned');
  }

  /**
   * Stops for good with `reason`: a term under way ends now; resolves once the lease is released. Called from
   * inside the term under way (its `fn`, or work `fn` started), it resolves once the term is deposed: waiting
   * for the release would wait for that `fn` to return, i.e. for the caller itself. The release still follows
   * when `fn` returns.
   */
  end(reason: Exclude<LeaderDeposedReason, 'lost'>): Promise<void> {
    if (this.stopReason === undefined) {
      this.stopReason = reason;
      this.stopping.abort(new LockLostError([this.key], this.endedBecause(reason)));
      this.depose(reason);
    }
    const inside = serving.getStore();
    return inside !== undefined && inside === this.office ? Promise.resolve() : this.done;
  }

  private async campaign(): Promise<void> {
    let pauseFirst = false;
    let unavailable = false;
    while (this.stopReason === undefined && !this.host.closed()) {
      if (pauseFirst && !(await this.pause(this.yieldFor))) break;
      let lock: Lock;
      try {
        lock = await this.host.acquire(this.key, {
          ttl: this.settings.ttl,
          wait: Infinity,
          signal: this.stopping.signal,
          // The leadership is this campaign's own: never a lock its caller's context already holds, never
          // capped or held over by the module's maxHold or minHold.
          reentrant: false,
          autoExtend: true,
          maxHold: Infinity,
          minHold: 0,
          label: this.key,
        });
      } catch (error) {
        if (this.stopReason !== undefined || this.host.closed()) break;
        // Told once per outage: the campaign tries again after each pause.
        if (!unavailable || !(error instanceof LockUnavailableError)) {
          this.host.logger.warn(
            `Campaigning for leadership "${this.name}" failed, trying again: ${safeMessage(error)}`,
          );
        }
        unavailable = error instanceof LockUnavailableError;
        pauseFirst = true;
        continue;
      }
      unavailable = false;
      // Resigned (rather than deposed by a loss): yield to the instances waiting before campaigning again.
      pauseFirst = !(await this.serve(lock));
    }
  }

  /**
   * One term: runs `fn`, then resigns. true when the term ended by the lease's loss. The term's lease ends with
   * the term: from the grant on, whatever ends it (`fn` returning or throwing, or a logger or an observer
   * throwing before `fn` ran), the `finally` deposes and releases, so a lease is never left held and renewed
   * with nobody exercising it.
   */
  private async serve(lock: Lock): Promise<boolean> {
    const controller = new AbortController();
    const term: LeaderTerm = {
      name: this.name,
      instance: this.host.instance,
      term: lock.fence,
      // Reading it reads the lease's signal, which checks the lease's validity deadline: a leader thawed
      // after its lease ran out reads it aborted before it can act (the loss aborts it through onLost).
      signal: checkedOnRead(controller.signal, () => void lock.signal.aborted),
    };
    const office: Office = { term, lock, controller, electedAt: performance.now(), deposed: false };
    const onLost = (): void => this.depose('lost');
    this.office = office;
    try {
      lock.signal.addEventListener('abort', onLost, { once: true });
      this.host.observer.elected(this.name, this.key, term.term);
      this.host.logger.log(`Elected leader of "${this.name}" (term ${term.term})`);
      // Stopped while the grant was on its way: the term ends before it begins.
      if (this.stopReason !== undefined) this.depose(this.stopReason);
      else if (lock.signal.aborted) this.depose('lost');
      if (!office.deposed) await this.exercise(office);
    } finally {
      lock.signal.removeEventListener('abort', onLost);
      try {
        this.depose(lock.signal.aborted ? 'lost' : (this.stopReason ?? 'resigned'));
      } finally {
        try {
          await this.host.releaseQuietly(lock);
        } finally {
          if (this.office === office) this.office = undefined;
        }
      }
    }
    return lock.signal.aborted;
  }

  /** Runs `fn` for the term; what it throws is logged (the term ends as a resignation). */
  private async exercise(office: Office): Promise<void> {
    const { term, lock } = office;
    try {
      await serving.run(office, () => this.host.runWithLock(lock, () => this.fn(term)));
    } catch (error) {
      // Its own signal's reason, thrown by throwIfAborted, is how a term is expected to end.
      if (error !== term.signal.reason) {
        this.host.logger.error(`Leader of "${this.name}" (term ${term.term}) failed: ${safeMessage(error)}`);
      }
    }
  }

  /** Ends the term under way, once: its signal aborts, and the event is told. */
  private depose(reason: LeaderDeposedReason): void {
    const office = this.office;
    if (!office || office.deposed) return;
    office.deposed = true;
    const { term, lock, controller } = office;
    if (!controller.signal.aborted) {
      const lostReason: unknown = lock.signal.aborted ? lock.signal.reason : undefined;
      controller.abort(lostReason ?? new LockLostError([this.key], this.endedBecause(reason)));
    }
    const ledMs = performance.now() - office.electedAt;
    this.host.observer.deposed(this.name, this.key, term.term, reason, ledMs);
    this.host.logger.log(
      `No longer leader of "${this.name}" (term ${term.term}, ` +
        `${Math.round(ledMs)} ms): ${reason === 'lost' ? 'its lease was lost' : reason}`,
    );
  }

  private endedBecause(reason: LeaderDeposedReason): string {
    if (reason === 'shutdown') return 'the leadership ended: the application is shutting down';
    if (reason === 'resigned') return 'the leadership ended: it was stopped';
    return 'the leadership was lost';
  }

  /** Waits `ms` (with jitter, so that instances do not campaign in step); false when stopped meanwhile. */
  private pause(ms: number): Promise<boolean> {
    const signal = this.stopping.signal;
    if (signal.aborted) return Promise.resolve(false);
    return new Promise((resolve) => {
      const onStop = (): void => {
        clearTimeout(timer);
        resolve(false);
      };
      const timer = setTimeout(
        () => {
          signal.removeEventListener('abort', onStop);
          resolve(true);
        },
        ms + Math.random() * Math.min(50, ms / 10),
      );
      signal.addEventListener('abort', onStop, { once: true });
    });
  }
}
