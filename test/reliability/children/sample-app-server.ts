/**
 * The sample app (sample-app/src/main.ts, configured by the environment: PORT, REDIS_URL, ...) with one
 * addition for the load test (../load.spec.ts): on a 'memory' message it collects garbage and answers
 * with process.memoryUsage(), so heap growth is measured after GC, not as allocation noise.
 */
import { type ChildMessage, runChild, send } from './child-runtime';

export interface MemoryMessage extends ChildMessage {
  readonly type: 'memory';
  readonly rss: number;
  readonly heapUsed: number;
}

runChild(async () => {
  process.on('message', (message: ChildMessage) => {
    if (message.type !== 'memory') return;
    const gc = (globalThis as { gc?: () => void }).gc;
    gc?.();
    gc?.();
    const { rss, heapUsed } = process.memoryUsage();
    send({ type: 'memory', rss, heapUsed } satisfies MemoryMessage);
  });
  // Starts the app (main.ts bootstraps on load, and exits on SIGTERM after closing it).
  await import('../../../sample-app/src/main');
});
