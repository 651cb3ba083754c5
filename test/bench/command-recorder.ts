import Redis from 'ioredis';
import { commandStats, resetStats, statsDelta, type CommandStats } from '../support/redis-stats';
import { sleep } from './clock';

/** One command as MONITOR reported it. */
export interface MonitoredCommand {
  /** Epoch ms (microsecond precision) at which Redis ran it. */
  readonly atMs: number;
  readonly name: string;
  /** True when a Lua script ran it (MONITOR source "lua"), false when a client sent it. */
  readonly fromScript: boolean;
}

export interface CommandRecording {
  /** Every command a client sent, in order (MONITOR lines not from a script). */
  readonly clientCommands: readonly MonitoredCommand[];
  /** Commands run inside scripts, as MONITOR saw them. */
  readonly scriptCommands: number;
  /** INFO commandstats delta, the harness's own commands left out: every call, scripts' included. */
  readonly commandStats: CommandStats;
  /** Sum of `commandStats`. */
  readonly allCommands: number;
}

/**
 * The harness's own commands (the recorder's MONITOR connection, INFO/CONFIG probes, the end marker,
 * connection handshakes such as ioredis' ready check), left out of every count.
 */
const HARNESS_COMMANDS = new Set(['info', 'config', 'monitor', 'echo', 'ping', 'hello', 'select', 'command']);

function isHarnessCommand(name: string): boolean {
  const base = name.split('|')[0];
  return HARNESS_COMMANDS.has(base) || base === 'client';
}

/**
 * Counts what a workload costs Redis, two ways:
 * - all commands: INFO commandstats (zeroed with CONFIG RESETSTAT at start) counts every call, including
 *   the commands a Lua script runs (SET, INCR, GET, DEL, PUBLISH inside one EVALSHA);
 * - client commands: MONITOR reports each command with its source, a client address or "lua", so the
 *   commands clients sent (EVALSHA, SET, SUBSCRIBE, ...) are exactly the lines whose source is not "lua".
 *   Their timestamps also tell which commands were sent while callers were waiting.
 * The two are cross-checked: MONITOR's client + script lines must add up to the commandstats total.
 */
export class CommandRecorder {
  private readonly commands: MonitoredCommand[] = [];
  private marker: string | undefined;
  private ended = false;
  private markerSeen: (() => void) | undefined;

  private constructor(
    private readonly url: string,
    private readonly monitor: Redis,
  ) {
    monitor.on('monitor', (time: string, args: string[], source: string) => this.record(time, args, source));
  }

  static async start(url: string): Promise<CommandRecorder> {
    await resetStats(url);
    const monitor = await new Redis(url, { lazyConnect: true }).monitor();
    // MONITOR is on once monitor() resolved: every command run from now on is reported.
    return new CommandRecorder(url, monitor);
  }

  /** Stops recording; everything Redis ran before this call is included. */
  async stop(): Promise<CommandRecording> {
    const stats = await commandStats(this.url);
    // The end marker is the last line of interest: once MONITOR delivered it, it delivered all before it.
    this.marker = `bench-end-${Math.random().toString(36).slice(2)}`;
    const seen = new Promise<void>((resolve) => (this.markerSeen = resolve));
    const probe = new Redis(this.url);
    await probe.echo(this.marker);
    await Promise.race([seen, sleep(2_000)]);
    probe.disconnect();
    this.monitor.disconnect();
    const counted: CommandStats = {};
    let allCommands = 0;
    for (const [name, calls] of Object.entries(statsDelta({}, stats))) {
      if (isHarnessCommand(name)) continue;
      counted[name] = calls;
      allCommands += calls;
    }
    return {
      clientCommands: this.commands.filter((command) => !command.fromScript),
      scriptCommands: this.commands.filter((command) => command.fromScript).length,
      commandStats: counted,
      allCommands,
    };
  }

  private record(time: string, args: string[], source: string): void {
    const name = (args[0] ?? '').toLowerCase();
    if (this.ended) return;
    if (this.marker !== undefined && name === 'echo' && args[1] === this.marker) {
      this.ended = true;
      this.markerSeen?.();
      return;
    }
    if (isHarnessCommand(name)) return;
    this.commands.push({ atMs: Number(time) * 1000, name, fromScript: source === 'lua' });
  }
}
