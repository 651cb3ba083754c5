/** A lock held by a contestant: the workloads only ever release it. */
export interface HeldLock {
  release(): Promise<unknown>;
}

/** Where a contestant runs: one Redis server, or five independent ones (Redlock quorum 3). */
export type Topology = 'single' | 'five';

/** What a row of the results is: the library under test, a peer it is compared with, or the floor. */
export type ContestantRole = 'library' | 'peer' | 'baseline';

/** One lock implementation, connected and ready: every workload drives it through `lock`. */
export interface Contestant {
  /** Acquires `key`, waiting while it is busy if `waits` (else failing), with a 10 s lease. */
  lock(key: string): Promise<HeldLock>;
  /**
   * Acquires one of `limit` slots of `key` (a counting semaphore), waiting while all are taken, with a
   * 10 s lease. Absent when the contestant has none: `semaphoreUnsupported` of its entry says why.
   */
  semaphore?(key: string, limit: number): Promise<HeldLock>;
  /** Closes every connection the contestant opened. */
  close(): Promise<void>;
}

/** How to make a contestant for a topology, and what it can do. */
export interface ContestantEntry {
  /** Short id used in key names and results.json. */
  readonly id: string;
  /** Row label in the tables and the chart. */
  readonly label: string;
  readonly role: ContestantRole;
  /** False for the raw baseline: it has no way to wait, so it sits out the contended workloads. */
  readonly waits: boolean;
  /**
   * Why the semaphore workload skips this contestant ("not yet supported", "no semaphore"); undefined when
   * its contestants implement `semaphore`. Printed and reported as is, never replaced by a figure.
   */
  readonly semaphoreUnsupported?: string;
  create(urls: readonly string[]): Promise<Contestant>;
}

/** Every lease in the benchmark lasts this long, for all contestants alike. */
export const LEASE_MS = 10_000;

/** How long a contended caller may wait before giving up: far beyond any measurement. */
export const MAX_WAIT_MS = 120_000;
