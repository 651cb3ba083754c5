import { sleep } from '../clock';
import { startClientCount, stopClientCount, type ClientCount } from './client-command-counter';
import { readServers, serverDelta, type ServerDelta, type ServerReading } from './server-meter';

/** What a measured window cost: Redis' side (CPU, every command it ran) and the clients' (what they sent). */
export interface Cost {
  readonly server: ServerDelta;
  readonly client: ClientCount;
  /**
   * Σ |client − server| over the commands a Lua script cannot run (EVAL family, (un)subscribe, MULTI/EXEC):
   * Redis counts exactly what the clients sent of these, so 0 means both sides counted the same.
   */
  readonly clientServerMismatch: number;
}

/** Commands Redis refuses inside scripts: every call of these in commandstats came from a client. */
const CLIENT_ONLY = [
  'eval',
  'evalsha',
  'eval_ro',
  'evalsha_ro',
  'subscribe',
  'unsubscribe',
  'psubscribe',
  'punsubscribe',
  'ssubscribe',
  'sunsubscribe',
  'multi',
  'exec',
  'watch',
  'unwatch',
];

/**
 * After the workload, before the closing reading: lets commands a contestant sends once its callers are
 * done (an UNSUBSCRIBE of a key nobody waits on any more) land in its own window, not the next one's.
 */
const SETTLE_MS = 50;

/**
 * Meters one measured window on the given servers: an INFO reading before and after (CPU time and
 * commandstats, see server-meter.ts), and the client-side command count in between (see
 * client-command-counter.ts). Nothing runs on Redis in the window but the workload: no MONITOR.
 */
export class CostMeter {
  private constructor(
    private readonly ports: readonly number[],
    private readonly before: readonly ServerReading[],
  ) {}

  static async start(ports: readonly number[], options: { timestamps?: boolean } = {}): Promise<CostMeter> {
    const before = await readServers(ports);
    startClientCount(ports, options);
    return new CostMeter(ports, before);
  }

  async stop(): Promise<Cost> {
    await sleep(SETTLE_MS);
    const client = stopClientCount();
    const server = serverDelta(this.before, await readServers(this.ports));
    let clientServerMismatch = 0;
    for (const name of CLIENT_ONLY)
      clientServerMismatch += Math.abs((client.byName[name] ?? 0) - (server.calls[name] ?? 0));
    return { server, client, clientServerMismatch };
  }
}
