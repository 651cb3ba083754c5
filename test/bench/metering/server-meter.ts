import { sendCommand } from '../../support/resp-client';
import { isHarnessCommand } from './harness-commands';

/** One reading of a redis-server: its CPU time so far and its per-command call counters. */
export interface ServerReading {
  /** used_cpu_sys + used_cpu_user of INFO cpu: the whole process (every thread), in seconds. */
  readonly cpuSeconds: number;
  /** calls per command from INFO commandstats, scripts' inner commands included under their own names. */
  readonly calls: Readonly<Record<string, number>>;
}

/** What the servers did between two readings, summed over the servers. */
export interface ServerDelta {
  readonly cpuSeconds: number;
  /** Calls per command (harness commands left out), every server added up. */
  readonly calls: Readonly<Record<string, number>>;
  /** Sum of `calls`. */
  readonly total: number;
}

/**
 * Reads the servers a workload ran on, before and after the measured window. Deltas, not CONFIG RESETSTAT:
 * RESETSTAT does not reset the CPU counters, and reading twice keeps every reading side-effect free.
 * One INFO per server per reading, on a fresh connection (see resp-client), so the harness's connection
 * is not one of the contestants' and its INFO calls are left out by name.
 */
export async function readServers(ports: readonly number[]): Promise<ServerReading[]> {
  return Promise.all(ports.map((port) => readServer(port)));
}

async function readServer(port: number): Promise<ServerReading> {
  // One INFO for both sections: the CPU and the counters are read at the same instant. Two sections in one
  // INFO need Redis 7; older servers get `everything` (slower to build, which the next reading would count).
  const info = String(
    await sendCommand(port, ['INFO', 'cpu', 'commandstats'], { timeoutMs: 5_000 }).catch(() =>
      sendCommand(port, ['INFO', 'everything'], { timeoutMs: 5_000 }),
    ),
  );
  let cpuSeconds = 0;
  const calls: Record<string, number> = {};
  for (const line of info.split('\r\n')) {
    const cpu = /^used_cpu_(sys|user):([0-9.]+)$/.exec(line);
    if (cpu) cpuSeconds += Number(cpu[2]);
    const stat = /^cmdstat_([^:]+):calls=(\d+)/.exec(line);
    if (stat) calls[stat[1]] = Number(stat[2]);
  }
  return { cpuSeconds, calls };
}

export function serverDelta(before: readonly ServerReading[], after: readonly ServerReading[]): ServerDelta {
  let cpuSeconds = 0;
  let total = 0;
  const calls: Record<string, number> = {};
  after.forEach((reading, index) => {
    cpuSeconds += reading.cpuSeconds - before[index].cpuSeconds;
    for (const [name, count] of Object.entries(reading.calls)) {
      const change = count - (before[index].calls[name] ?? 0);
      if (change === 0 || isHarnessCommand(name)) continue;
      calls[name] = (calls[name] ?? 0) + change;
      total += change;
    }
  });
  return { cpuSeconds, calls, total };
}
