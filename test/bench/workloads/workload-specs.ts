import type { Topology } from '../contestants';

export type WorkloadId =
  | 'serial'
  | 'parallel64'
  | 'contended-8x1ms'
  | 'contended-16x20ms'
  | 'redlock5-serial'
  | 'redlock5-parallel64';

export type WorkloadKind = 'serial' | 'parallel' | 'contended';

export interface WorkloadSpec {
  readonly id: WorkloadId;
  /** Heading in the tables and the chart. */
  readonly title: string;
  readonly kind: WorkloadKind;
  readonly topology: Topology;
  readonly callers: number;
  /** Critical section of the contended workloads. */
  readonly holdMs: number;
}

/** Workloads 1-4 of issue 6, in the order they run within a round (workload 5, memory, runs once at the end). */
export const WORKLOADS: readonly WorkloadSpec[] = [
  { id: 'serial', title: '1 serial (1 caller, 1 key)', kind: 'serial', topology: 'single', callers: 1, holdMs: 0 },
  { id: 'parallel64', title: '2 parallel64 (64 callers, distinct keys)', kind: 'parallel', topology: 'single', callers: 64, holdMs: 0 },
  { id: 'contended-8x1ms', title: '3a contended (8 callers, 1 key, 1 ms held)', kind: 'contended', topology: 'single', callers: 8, holdMs: 1 },
  { id: 'contended-16x20ms', title: '3b contended (16 callers, 1 key, 20 ms held)', kind: 'contended', topology: 'single', callers: 16, holdMs: 20 },
  { id: 'redlock5-serial', title: '4a redlock5 serial (5 servers)', kind: 'serial', topology: 'five', callers: 1, holdMs: 0 },
  { id: 'redlock5-parallel64', title: '4b redlock5 parallel64 (5 servers)', kind: 'parallel', topology: 'five', callers: 64, holdMs: 0 },
];
