/** One Redis node's answer to a health probe (Redlock reports one per node). */
export type NodeHealth = {
  /** The node's label: `nodes[0]`, `nodes[1]`… in the order of the `nodes` option. */
  readonly node: string;
  readonly status: 'up' | 'down';
  /** Round trip of the probe (PING), in ms, when it answered. */
  readonly latencyMs?: number;
  /** Why it is down. */
  readonly message?: string;
};

/** What a lock store says of its own health: answering or not, and for Redlock, node by node. */
export type StoreHealth = {
  readonly up: boolean;
  /** Round trip of the probe, in ms (Redlock: until a quorum answered). */
  readonly latencyMs?: number;
  /** Why it is down. */
  readonly message?: string;
  /** Why it is down, as the error a lock call would meet (the startup check throws it; health shows `message`). */
  readonly error?: Error;
  /** Redlock: how many nodes must answer. */
  readonly quorum?: number;
  readonly nodes?: readonly NodeHealth[];
};

/** The part of a lock store the health indicator needs. */
export interface StoreHealthSource {
  /** 'memory', 'redis' or 'redlock'. */
  readonly kind: string;
  /** Probes the store; resolves (never rejects) with what it found. */
  health(): Promise<StoreHealth>;
}

/** A latency for people: to a tenth of a millisecond. */
export function roundMs(ms: number): number {
  return Math.round(ms * 10) / 10;
}
