import type { Topology } from '../contestants';

export type WorkloadId =
  | 'serial'
  | 'parallel64'
  | 'contended-8x1ms'
  | 'contended-16x20ms'
  | 'hotkey-8'
  | 'hotkey-32'
  | 'hotkey-64'
  | 'semaphore-4of16x1ms'
  | 'redlock5-serial'
  | 'redlock5-parallel64';

/**
 * serial / parallel: uncontended loops, sliced and interleaved (see sliced-measurement.ts);
 * turns: callers on one key taking turns (contended with a critical section, hot key without one, and the
 * semaphore), one contestant after another, Redis' cost metered (see turns-measurement.ts).
 */
export type WorkloadKind = 'serial' | 'parallel' | 'turns';

export interface WorkloadSpec {
  readonly id: WorkloadId;
  /** Heading in the tables and the chart. */
  readonly title: string;
  readonly kind: WorkloadKind;
  readonly topology: Topology;
  readonly callers: number;
  /** Critical section of the turns workloads; 0: release at once after the grant (hot key). */
  readonly holdMs: number;
  /** Holders allowed at once: 1 for a lock, more for the semaphore workload (driven by `semaphore`). */
  readonly limit: number;
  /** Only these contestants run it (ids); all that can, when absent. */
  readonly only?: readonly string[];
  /** Why `only` (printed in the report). */
  readonly onlyWhy?: string;
}

/** Our contestants judged by the targets: the module-owned client and the borrowed ioredis clients. */
export const OURS: readonly string[] = [
  'library',
  'library-borrowed',
  'library-borrowed-ioredis5',
  'library-borrowed-ioredis6',
];

/** The workloads, in the order they run within a round (the memory check runs once at the end). */
export const WORKLOADS: readonly WorkloadSpec[] = [
  {
    id: 'serial',
    title: '1 serial (1 caller, 1 key)',
    kind: 'serial',
    topology: 'single',
    callers: 1,
    holdMs: 0,
    limit: 1,
  },
  {
    id: 'parallel64',
    title: '2 parallel64 (64 callers, distinct keys)',
    kind: 'parallel',
    topology: 'single',
    callers: 64,
    holdMs: 0,
    limit: 1,
  },
  {
    id: 'contended-8x1ms',
    title: '3a contended (8 callers, 1 key, 1 ms held)',
    kind: 'turns',
    topology: 'single',
    callers: 8,
    holdMs: 1,
    limit: 1,
  },
  {
    id: 'contended-16x20ms',
    title: '3b contended (16 callers, 1 key, 20 ms held)',
    kind: 'turns',
    topology: 'single',
    callers: 16,
    holdMs: 20,
    limit: 1,
  },
  {
    id: 'hotkey-8',
    title: '3c hot key (8 callers, 1 key, nothing held)',
    kind: 'turns',
    topology: 'single',
    callers: 8,
    holdMs: 0,
    limit: 1,
  },
  {
    id: 'hotkey-32',
    title: '3d hot key (32 callers, 1 key, nothing held)',
    kind: 'turns',
    topology: 'single',
    callers: 32,
    holdMs: 0,
    limit: 1,
    only: OURS,
    onlyWhy: 'ours only: the acquire-script count at 32 callers',
  },
  {
    id: 'hotkey-64',
    title: '3e hot key (64 callers, 1 key, nothing held)',
    kind: 'turns',
    topology: 'single',
    callers: 64,
    holdMs: 0,
    limit: 1,
  },
  {
    id: 'semaphore-4of16x1ms',
    title: '3f semaphore (limit 4, 16 callers, 1 ms held)',
    kind: 'turns',
    topology: 'single',
    callers: 16,
    holdMs: 1,
    limit: 4,
  },
  {
    id: 'redlock5-serial',
    title: '4a redlock5 serial (5 servers)',
    kind: 'serial',
    topology: 'five',
    callers: 1,
    holdMs: 0,
    limit: 1,
  },
  {
    id: 'redlock5-parallel64',
    title: '4b redlock5 parallel64 (5 servers)',
    kind: 'parallel',
    topology: 'five',
    callers: 64,
    holdMs: 0,
    limit: 1,
  },
];
