import os from 'node:os';
import path from 'node:path';
import { WORKLOADS, type WorkloadId } from './workloads/workload-specs';

/**
 * Slices per round of the serial and parallel workloads, the contestants taking turns slice by slice. 8 (was
 * 4): on this shared 2-core machine the speed of everything drifts by 2-3x within minutes, and two runs of
 * the same code path (owned and borrowed clients) came out 0.76x and 0.99x with 4; finer turns spread such
 * drift more evenly over the contestants, at the same total time.
 */
export const SLICES_PER_ROUND = 8;

export interface BenchOptions {
  /** Each measurement is repeated this many times, contestants interleaved; the median is reported. */
  readonly rounds: number;
  /** Length of one measurement. */
  readonly durationMs: number;
  /** Untimed run of every contestant before the first round (JIT, connections, script cache). */
  readonly warmUpMs: number;
  readonly workloads: readonly WorkloadId[];
  /** Cycles of the memory workload; 0 skips it. */
  readonly memoryCycles: number;
  /** Where RESULTS.md, throughput.svg and results.json go. */
  readonly outDir: string;
}

/**
 * 3 rounds of 1.25 s per measurement: eleven workloads × up to six contestants (this library three times:
 * owned, borrowed ioredis, borrowed node-redis) make ~50 measurements a round; 1.5 s took the whole run
 * (census, warm-up, 3 rounds, 1M-cycle memory check) to 5 min 10 s on two shared cores, over the 5 minutes
 * allowed.
 */
export const DEFAULT_OPTIONS: BenchOptions = {
  rounds: 3,
  durationMs: 1_250,
  warmUpMs: 500,
  workloads: WORKLOADS.map((workload) => workload.id),
  memoryCycles: 1_000_000,
  outDir: 'bench-results',
};

/** A smoke run's files go to a temp dir: they are not results to publish. */
const QUICK_OUT_DIR = path.join(os.tmpdir(), 'nestjs-redis-lock-bench-quick');

export const USAGE = `npm run bench [-- options]
  --rounds=N        repetitions of every measurement, median reported (default 3, at least 1)
  --duration=MS     length of one measurement (default 1250)
  --only=a,b        workloads to run: ${WORKLOADS.map((workload) => workload.id).join(', ')}
  --memory=N        cycles of the memory workload, 0 to skip (default 1000000)
  --out=DIR         output directory (default bench-results)
  --quick           smoke run: 1 round of 500 ms, 100000 memory cycles, written to a temp dir`;

/** Parses `--name=value` flags; throws with the usage on anything else. */
export function parseBenchOptions(argv: readonly string[]): BenchOptions {
  let options: BenchOptions = DEFAULT_OPTIONS;
  for (const arg of argv) {
    const [flag, value = ''] = arg.split('=', 2);
    switch (flag) {
      case '--quick':
        options = {
          ...options,
          rounds: 1,
          durationMs: 500,
          warmUpMs: 200,
          memoryCycles: 100_000,
          outDir: QUICK_OUT_DIR,
        };
        break;
      case '--rounds':
        options = { ...options, rounds: integer(flag, value, 1) };
        break;
      case '--duration':
        options = { ...options, durationMs: integer(flag, value, 100) };
        break;
      case '--memory':
        options = { ...options, memoryCycles: integer(flag, value, 0) };
        break;
      case '--out':
        options = { ...options, outDir: value };
        break;
      case '--only': {
        const wanted = value.split(',').filter(Boolean);
        const unknown = wanted.filter((id) => !WORKLOADS.some((workload) => workload.id === id));
        if (unknown.length > 0 || wanted.length === 0)
          throw new Error(`unknown workload(s) ${unknown.join(', ')}\n${USAGE}`);
        options = { ...options, workloads: wanted as WorkloadId[] };
        break;
      }
      default:
        throw new Error(`unknown option ${arg}\n${USAGE}`);
    }
  }
  return options;
}

function integer(flag: string, value: string, min: number): number {
  const parsed = Number(value);
  if (!Number.isInteger(parsed) || parsed < min)
    throw new Error(`${flag} needs an integer >= ${min}, got "${value}"\n${USAGE}`);
  return parsed;
}
