import { sendCommand } from './resp-client';

/** Calls per command since the last reset, from INFO commandstats: `{ evalsha: 12, subscribe: 3, ... }`. */
export type CommandStats = Record<string, number>;

function portOf(url: string): { host: string; port: number } {
  const parsed = new URL(url);
  return { host: parsed.hostname, port: Number(parsed.port || 6379) };
}

/**
 * Reads INFO commandstats. Commands run inside Lua scripts are counted too, under their own names.
 * The INFO calls of this helper are counted under `info` (this call's own only shows in the next read).
 */
export async function commandStats(url: string): Promise<CommandStats> {
  const { host, port } = portOf(url);
  const info = await sendCommand(port, ['INFO', 'commandstats'], { host });
  const stats: CommandStats = {};
  for (const line of String(info).split('\r\n')) {
    const match = /^cmdstat_([^:]+):calls=(\d+)/.exec(line);
    if (match) stats[match[1]] = Number(match[2]);
  }
  return stats;
}

/** CONFIG RESETSTAT: zeroes the command counters (and the other INFO statistics). */
export async function resetStats(url: string): Promise<void> {
  const { host, port } = portOf(url);
  await sendCommand(port, ['CONFIG', 'RESETSTAT'], { host });
}

/** after − before per command, leaving out commands whose count did not change. */
export function statsDelta(before: CommandStats, after: CommandStats): CommandStats {
  const delta: CommandStats = {};
  for (const [command, calls] of Object.entries(after)) {
    const change = calls - (before[command] ?? 0);
    if (change !== 0) delta[command] = change;
  }
  return delta;
}
