// What LockService tells about its locks, passed on to `events` subscribers and to OpenTelemetry when installed.
import { Logger } from '@nestjs/common';
import type { Observable } from 'rxjs';
import { LockNotAcquiredError, LockUnavailableError } from '../errors';
import type { LeaderDeposedReason } from '../engine/leader/leader.interface';
import type { LockEvent } from './lock-event';
import { LockEventStream } from './lock-event-stream';
import { type AcquireOutcomeName, LockTelemetry } from './lock-telemetry';
import { loadOptionalPeer, type OptionalPeer } from '../util/optional-peer';
import type { OtelApi, OtelSpan } from './otel-api';
import { safeMessage } from '../errors/safe-cause';

/** The package whose presence turns metrics and spans on. */
export const OTEL_API_PACKAGE = '@opentelemetry/api';

/**
 * What LockService tells about its locks, told on to `events` subscribers and to OpenTelemetry. The
 * service calls it at each grant, release, loss and failed acquisition; this class decides what that costs:
 * an event is built only while someone subscribes, and metrics are recorded only when `@opentelemetry/api`
 * is installed.
 *
 * The package is looked up here, when the service is created at bootstrap, not on the first lock: a
 * synchronous require takes about 20 ms (more on a busy machine), a stall that would make commands of
 * other callers in flight time out. The instruments are made on the first lock, so an SDK registered
 * during bootstrap is the one recording.
 */
export class LockObserver {
  private readonly stream = new LockEventStream();
  private readonly otel: OptionalPeer<OtelApi>;
  /** undefined: not made yet; null: OpenTelemetry is not installed. */
  private telemetryLookup: LockTelemetry | null | undefined;

  constructor(
    readonly instance: string,
    readonly store: string,
  ) {
    this.otel = loadOptionalPeer<OtelApi>(OTEL_API_PACKAGE);
    if (!toldOnce) {
      toldOnce = true;
      new Logger('LockService').debug(
        this.otel.loaded
          ? 'OpenTelemetry API found: recording lock metrics and wait spans'
          : `Lock metrics off: ${this.otel.reason}`,
      );
    }
  }

  get events(): Observable<LockEvent> {
    return this.stream.events;
  }

  /** The first attempt found the keys busy and the call will wait: the wait span starts (back-dated to the call). */
  waiting(label: string | undefined, startedAt: number, keyCount: number): OtelSpan | undefined {
    return this.telemetry()?.waitSpan(label, startedAt, keyCount);
  }

  acquired(
    keys: readonly string[],
    fences: readonly number[],
    label: string | undefined,
    startedAt: number,
    span: OtelSpan | undefined,
  ): void {
    const telemetry = this.telemetry();
    if (!telemetry && !this.stream.observed) return;
    const waitedMs = performance.now() - startedAt;
    if (telemetry) {
      telemetry.acquisition(label, 'acquired', waitedMs);
      telemetry.granted(label);
      if (span) telemetry.endWaitSpan(span, 'acquired');
    }
    if (this.stream.observed) {
      const byKey: Record<string, number> = {};
      keys.forEach((key, index) => (byKey[key] = fences[index]));
      this.stream.emit({ ...this.common('acquired', keys, label), waitedMs, fences: byKey });
    }
  }

  /** An acquisition ended without a grant: `error` null is tryAcquire's busy null; `signal`, the call's. */
  notAcquired(
    keys: readonly string[],
    label: string | undefined,
    startedAt: number,
    error: unknown,
    span: OtelSpan | undefined,
    signal?: AbortSignal,
  ): void {
    const telemetry = this.telemetry();
    if (!telemetry && !this.stream.observed) return;
    const waitedMs = performance.now() - startedAt;
    const outcome = signal?.aborted ? 'cancelled' : outcomeOf(error);
    if (telemetry) {
      telemetry.acquisition(label, outcome, waitedMs);
      if (span) telemetry.endWaitSpan(span, outcome, error instanceof Error ? error : undefined);
    }
    if (!this.stream.observed) return;
    // Cancelled calls and programming errors are the caller's own business, not lock events.
    if (outcome === 'busy') this.stream.emit({ ...this.common('busy', keys, label), waitedMs });
    else if (outcome === 'unavailable') {
      this.stream.emit({ ...this.common('unavailable', keys, label), waitedMs, reason: safeMessage(error) });
    }
  }

  /** A grant ended: released by its holder, or lost (`lostReason`). */
  ended(keys: readonly string[], label: string | undefined, grantedAt: number, lostReason: string | undefined): void {
    const telemetry = this.telemetry();
    if (!telemetry && !this.stream.observed) return;
    const heldMs = performance.now() - grantedAt;
    telemetry?.ended(label, lostReason === undefined ? 'released' : 'lost', heldMs);
    if (!this.stream.observed) return;
    if (lostReason === undefined) this.stream.emit({ ...this.common('released', keys, label), heldMs });
    else this.stream.emit({ ...this.common('lost', keys, label), heldMs, reason: lostReason });
  }

  /** A term of office of leadership `leader` began (its lock `key` was granted with fence `term`). */
  elected(leader: string, key: string, term: number): void {
    this.telemetry()?.elected(key);
    if (this.stream.observed) this.stream.emit({ ...this.common('elected', [key], key), leader, term });
  }

  /** That term ended, `ledMs` after it began. */
  deposed(leader: string, key: string, term: number, reason: LeaderDeposedReason, ledMs: number): void {
    this.telemetry()?.deposed(key, reason, ledMs);
    if (this.stream.observed) this.stream.emit({ ...this.common('deposed', [key], key), leader, term, reason, ledMs });
  }

  /** The service shut down: subscribers complete. */
  complete(): void {
    this.stream.complete();
  }

  private common<Type extends LockEvent['type']>(type: Type, keys: readonly string[], label: string | undefined) {
    const event = { type, keys, instance: this.instance, store: this.store, at: Date.now() };
    return label === undefined ? event : { ...event, label };
  }

  private telemetry(): LockTelemetry | null {
    if (this.telemetryLookup === undefined) {
      this.telemetryLookup = this.otel.loaded ? new LockTelemetry(this.otel.module, this.store) : null;
    }
    return this.telemetryLookup;
  }
}

/** Whether the process was told where metrics stand (once: every LockService looks it up). */
let toldOnce = false;

function outcomeOf(error: unknown): AcquireOutcomeName {
  if (error === null || error instanceof LockNotAcquiredError) return 'busy';
  if (error instanceof LockUnavailableError) return 'unavailable';
  return 'error';
}
