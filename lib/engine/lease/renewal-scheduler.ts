// One timer for every held lock's renewal and validity deadline: a min-heap of tasks on their due times.
import { MAX_TIMER_DELAY_MS } from '../../util/timers';

/** Something the scheduler calls back at a monotonic time. */
export interface ScheduledTask {
  /** performance.now() time at which `run` is due. */
  dueAt: number;
  /** Position in the heap; -1 when not scheduled. Owned by the scheduler. */
  heapIndex: number;
  run(): void;
}

/**
 * One timer for every held lock's renewal and validity deadline. Tasks sit in a binary min-heap on their
 * due time; a single unref'd setTimeout is armed for the earliest one. Scheduling a task later than the
 * armed timer (the common case: every new lease is due later than the ones before it) touches no timer,
 * and removing a task never re-arms one (an early wake-up just finds nothing due), so acquire/release
 * stay O(log n) with no timer churn, for thousands of held locks.
 */
export class RenewalScheduler {
  private readonly heap: ScheduledTask[] = [];
  private timer: NodeJS.Timeout | undefined;
  private timerAt = Infinity;

  get size(): number {
    return this.heap.length;
  }

  schedule(task: ScheduledTask, dueAt: number): void {
    if (task.heapIndex >= 0) this.remove(task);
    task.dueAt = dueAt;
    task.heapIndex = this.heap.length;
    this.heap.push(task);
    this.siftUp(task.heapIndex);
    if (dueAt < this.timerAt) this.arm(dueAt);
  }

  remove(task: ScheduledTask): void {
    const index = task.heapIndex;
    if (index < 0) return;
    const last = this.heap.pop() as ScheduledTask;
    task.heapIndex = -1;
    if (last === task) return;
    this.heap[index] = last;
    last.heapIndex = index;
    this.siftDown(index);
    this.siftUp(last.heapIndex);
  }

  /** Drops every task and the timer (shutdown). */
  clear(): void {
    for (const task of this.heap) task.heapIndex = -1;
    this.heap.length = 0;
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    this.timerAt = Infinity;
  }

  private arm(at: number): void {
    if (this.timer) clearTimeout(this.timer);
    // Node fires a delay above 2^31 - 1 ms after 1 ms instead (and warns): a task due later than that is
    // reached in steps of the longest delay; fire() finds nothing due and arms the next step.
    const delay = Math.min(MAX_TIMER_DELAY_MS, Math.max(0, at - performance.now()));
    this.timerAt = performance.now() + delay;
    this.timer = setTimeout(() => this.fire(), delay);
    this.timer.unref();
  }

  private fire(): void {
    this.timer = undefined;
    this.timerAt = Infinity;
    const now = performance.now();
    while (this.heap.length > 0 && this.heap[0].dueAt <= now) {
      const task = this.heap[0];
      this.remove(task);
      task.run();
    }
    if (this.heap.length > 0 && this.heap[0].dueAt < this.timerAt) this.arm(this.heap[0].dueAt);
  }

  private siftUp(index: number): void {
    const heap = this.heap;
    const task = heap[index];
    while (index > 0) {
      const parent = (index - 1) >> 1;
      if (heap[parent].dueAt <= task.dueAt) break;
      heap[index] = heap[parent];
      heap[index].heapIndex = index;
      index = parent;
    }
    heap[index] = task;
    task.heapIndex = index;
  }

  private siftDown(index: number): void {
    const heap = this.heap;
    const task = heap[index];
    const length = heap.length;
    for (;;) {
      const left = 2 * index + 1;
      if (left >= length) break;
      const right = left + 1;
      const child = right < length && heap[right].dueAt < heap[left].dueAt ? right : left;
      if (heap[child].dueAt >= task.dueAt) break;
      heap[index] = heap[child];
      heap[index].heapIndex = index;
      index = child;
    }
    heap[index] = task;
    task.heapIndex = index;
  }
}
