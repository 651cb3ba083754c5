/** What the history checker concludes from one run (see history.spec.ts). */
export interface HistoryVerdict {
  /** Critical sections the workers completed, summed over the processes. */
  readonly cycles: number;
  /** The counter's final value. */
  readonly counter: number;
  /** Cycles whose update was lost: cycles − counter (0 under mutual exclusion). */
  readonly lostUpdates: number;
  /** Entries whose fence is not greater than the one before it (0 under mutual exclusion with fencing). */
  readonly fenceInversions: number;
  /** Entries pushed, i.e. cycles the list saw. */
  readonly entries: number;
  /** How many times consecutive entries come from different processes: the processes really interleaved. */
  readonly handoffsBetweenProcesses: number;
  /** Cycles per process index. */
  readonly cyclesByProcess: Readonly<Record<string, number>>;
  /** lostUpdates + fenceInversions + |entries − cycles|. */
  readonly violations: number;
}

/**
 * Checks a history of locked cycles: the counter must equal the completed cycles (no lost update), and
 * the fences, in the order the critical sections pushed them, must strictly increase (each critical
 * section started after the previous one's, with a newer grant). Entries are `<fence>:<process>:<worker>`.
 */
export function checkHistory(cycles: number, counter: number, entries: readonly string[]): HistoryVerdict {
  let fenceInversions = 0;
  let handoffsBetweenProcesses = 0;
  const cyclesByProcess: Record<string, number> = {};
  let previous: { fence: number; process: string } | undefined;
  for (const entry of entries) {
    const [fenceText, process] = entry.split(':');
    const fence = Number(fenceText);
    cyclesByProcess[process] = (cyclesByProcess[process] ?? 0) + 1;
    if (previous) {
      if (!(fence > previous.fence)) fenceInversions++;
      if (process !== previous.process) handoffsBetweenProcesses++;
    }
    previous = { fence, process };
  }
  const lostUpdates = cycles - counter;
  return {
    cycles,
    counter,
    lostUpdates,
    fenceInversions,
    entries: entries.length,
    handoffsBetweenProcesses,
    cyclesByProcess,
    violations: Math.abs(lostUpdates) + fenceInversions + Math.abs(entries.length - cycles),
  };
}
