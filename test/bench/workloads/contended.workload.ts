import { epochNow, sleep } from '../clock';
import { CommandRecorder, type MonitoredCommand } from '../command-recorder';
import type { Contestant } from '../contestants';
import { Samples } from '../stats';

export interface ContendedResult {
  readonly opsPerSec: number;
  readonly acquisitions: number;
  /** Time from a holder calling release() to the next caller's acquire() resolving. */
  readonly handoverP50Ms: number;
  readonly handoverP99Ms: number;
  /** The longest any caller waited for one acquisition. */
  readonly longestWaitMs: number;
  /** Commands the clients sent (EVALSHA, SET, SUBSCRIBE, ...) per acquisition. */
  readonly clientCommandsPerAcquisition: number;
  /** Every command Redis ran, those inside scripts included, per acquisition. */
  readonly allCommandsPerAcquisition: number;
  /**
   * Commands sent per waiting caller per second, counted while every other caller was waiting: from 5 ms
   * after a grant (the previous holder has queued again by then) to 1 ms before its release. NaN when the
   * critical section is too short for such a window.
   */
  readonly waitingCommandsPerWaiterSecond: number;
  /** Client commands by name, per acquisition: what the cost is made of. */
  readonly clientCommandMix: Readonly<Record<string, number>>;
  /** Every command Redis ran (commandstats) by name, per acquisition. */
  readonly allCommandMix: Readonly<Record<string, number>>;
  /** Grants while another caller still held the key: must be 0 (a broken lock would show here). */
  readonly overlaps: number;
  /** MONITOR's client + script lines minus the commandstats total: 0 when both counts agree. */
  readonly countMismatch: number;
}

/** A waiting window starts this long after a grant, so the previous holder has queued again. */
const WINDOW_START_MS = 5;
/** ... and ends this long before the holder's release. */
const WINDOW_END_MS = 1;
/** Shorter critical sections leave no waiting window worth measuring. */
const MIN_HOLD_FOR_WINDOWS_MS = 10;
/** Upper bound on each caller's acquisitions, whatever the duration. */
const MAX_ACQUISITIONS_PER_CALLER = 100_000;

interface Window {
  readonly from: number;
  readonly to: number;
}

/**
 * Workload 3: `callers` callers take turns on one key, each holding it for `holdMs`, until `durationMs` has
 * passed (callers still waiting then get their turn and stop). Redis' commands are recorded throughout.
 */
export async function runContended(
  contestant: Contestant,
  url: string,
  key: string,
  callers: number,
  holdMs: number,
  durationMs: number,
): Promise<ContendedResult> {
  const recorder = await CommandRecorder.start(url);
  const handovers = new Samples();
  const windows: Window[] = [];
  let longestWaitMs = 0;
  let acquisitions = 0;
  let overlaps = 0;
  let holding = false;
  let lastReleaseAt: number | undefined;

  const startedAt = epochNow();
  const deadline = startedAt + durationMs;
  const caller = async (): Promise<void> => {
    for (let own = 0; own < MAX_ACQUISITIONS_PER_CALLER && epochNow() < deadline; own++) {
      const requestedAt = epochNow();
      const held = await contestant.lock(key);
      const grantedAt = epochNow();
      if (holding) overlaps++;
      holding = true;
      acquisitions++;
      longestWaitMs = Math.max(longestWaitMs, grantedAt - requestedAt);
      if (lastReleaseAt !== undefined) handovers.push(grantedAt - lastReleaseAt);
      await sleep(holdMs);
      const releasingAt = epochNow();
      holding = false;
      lastReleaseAt = releasingAt;
      // Only while nobody has stopped yet are all other callers waiting.
      if (releasingAt < deadline) windows.push({ from: grantedAt + WINDOW_START_MS, to: releasingAt - WINDOW_END_MS });
      await held.release();
    }
  };
  await Promise.all(Array.from({ length: callers }, () => caller()));
  const elapsedMs = epochNow() - startedAt;
  const recording = await recorder.stop();

  const clientCommandMix: Record<string, number> = {};
  for (const command of recording.clientCommands) {
    clientCommandMix[command.name] = (clientCommandMix[command.name] ?? 0) + 1 / acquisitions;
  }
  const allCommandMix: Record<string, number> = {};
  for (const [name, calls] of Object.entries(recording.commandStats)) allCommandMix[name] = calls / acquisitions;
  const monitored = recording.clientCommands.length + recording.scriptCommands;
  return {
    opsPerSec: (acquisitions * 1000) / elapsedMs,
    acquisitions,
    handoverP50Ms: handovers.percentile(0.5),
    handoverP99Ms: handovers.percentile(0.99),
    longestWaitMs,
    clientCommandsPerAcquisition: recording.clientCommands.length / acquisitions,
    allCommandsPerAcquisition: recording.allCommands / acquisitions,
    waitingCommandsPerWaiterSecond:
      holdMs >= MIN_HOLD_FOR_WINDOWS_MS ? commandsPerWaiterSecond(recording.clientCommands, windows, callers - 1) : NaN,
    clientCommandMix,
    allCommandMix,
    overlaps,
    countMismatch: monitored - recording.allCommands,
  };
}

/** Client commands inside the windows, per waiter and per second of window. */
function commandsPerWaiterSecond(commands: readonly MonitoredCommand[], windows: readonly Window[], waiters: number): number {
  const usable = windows.filter((window) => window.to > window.from);
  const windowMs = usable.reduce((total, window) => total + (window.to - window.from), 0);
  if (windowMs === 0 || waiters === 0) return NaN;
  let inside = 0;
  let next = 0;
  for (const command of commands) {
    while (next < usable.length && usable[next].to < command.atMs) next++;
    if (next === usable.length) break;
    if (command.atMs >= usable[next].from) inside++;
  }
  return (inside * 1000) / windowMs / waiters;
}
