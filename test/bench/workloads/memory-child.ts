/**
 * Workload 5, run in a child process started with --expose-gc (see memory.workload.ts): acquire + release
 * on unique keys through this library, and the heap after a full GC before and after. Prints one line,
 * `RESULT {json}`, on stdout.
 *
 * argv: <redis url> <cycles> <concurrency>
 */
import { setImmediate as nextTurn } from 'node:timers/promises';
import { sendCommand } from '../../support/resp-client';
import { sleep } from '../clock';
import { libraryEntry } from '../contestants';
import type { MemoryResult } from './memory.workload';

/** Cycles run before the first heap reading: JIT, connection buffers and pools reach their steady size. */
const WARM_UP_CYCLES = 50_000;
/** Redis is flushed between batches: every unique key leaves a fence counter behind (by design). */
const BATCH_CYCLES = 100_000;

async function heapAfterGc(): Promise<number> {
  const gc = globalThis.gc;
  if (!gc) throw new Error('run with node --expose-gc');
  // Let pending callbacks and timers of finished cycles run, then collect until the heap stops shrinking.
  await sleep(50);
  let heap = Infinity;
  for (let pass = 0; pass < 5; pass++) {
    gc();
    await nextTurn();
    const used = process.memoryUsage().heapUsed;
    if (used >= heap) break;
    heap = used;
  }
  return heap;
}

async function main(): Promise<void> {
  const [url, cyclesArg, concurrencyArg] = process.argv.slice(2);
  const cycles = Number(cyclesArg);
  const concurrency = Number(concurrencyArg);
  const port = Number(new URL(url).port);
  const flush = (): Promise<unknown> => sendCommand(port, ['FLUSHALL'], { timeoutMs: 30_000 });
  const contestant = await libraryEntry.create([url]);

  let nextKey = 0;
  const runCycles = async (count: number): Promise<void> => {
    const end = nextKey + count;
    const caller = async (): Promise<void> => {
      while (nextKey < end) {
        const held = await contestant.lock(`bench:memory:${nextKey++}`);
        await held.release();
      }
    };
    await Promise.all(Array.from({ length: concurrency }, () => caller()));
  };

  await runCycles(WARM_UP_CYCLES);
  await flush();
  const heapBeforeBytes = await heapAfterGc();
  const startedAt = performance.now();
  for (let done = 0; done < cycles; done += BATCH_CYCLES) {
    await runCycles(Math.min(BATCH_CYCLES, cycles - done));
    await flush();
  }
  const seconds = (performance.now() - startedAt) / 1000;
  const heapAfterBytes = await heapAfterGc();
  await contestant.close();

  const result: MemoryResult = {
    cycles,
    concurrency,
    seconds,
    heapBeforeMb: heapBeforeBytes / 2 ** 20,
    heapAfterMb: heapAfterBytes / 2 ** 20,
    growthMb: (heapAfterBytes - heapBeforeBytes) / 2 ** 20,
  };
  process.stdout.write(`RESULT ${JSON.stringify(result)}\n`);
}

main().catch((error: unknown) => {
  process.stderr.write(`${error instanceof Error ? error.stack : String(error)}\n`);
  process.exit(1);
});
