// The hot stream behind `LockService.events`: emits to its subscribers, says whether any listen, never errors.
import { Observable, type Subscriber } from 'rxjs';
import type { LockEvent } from './lock-event';

/**
 * The hot stream behind `LockService.events`. Nothing is built for nobody: callers ask `observed` before
 * making an event, so a service without subscribers pays one property read per lock operation (the
 * serial benchmark must not move). It never errors: a subscriber's throwing handler is rxjs's to report
 * and never reaches the lock operation that emitted. It completes when the service shuts down.
 */
export class LockEventStream {
  private readonly subscribers = new Set<Subscriber<LockEvent>>();
  private completed = false;

  readonly events: Observable<LockEvent> = new Observable<LockEvent>((subscriber) => {
    if (this.completed) {
      subscriber.complete();
      return undefined;
    }
    this.subscribers.add(subscriber);
    return () => this.subscribers.delete(subscriber);
  });

  get observed(): boolean {
    return this.subscribers.size > 0;
  }

  emit(event: LockEvent): void {
    for (const subscriber of this.subscribers) subscriber.next(event);
  }

  complete(): void {
    this.completed = true;
    const subscribers = [...this.subscribers];
    this.subscribers.clear();
    for (const subscriber of subscribers) subscriber.complete();
  }
}
