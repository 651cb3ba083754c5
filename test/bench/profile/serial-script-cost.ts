/**
 * What a Lua script costs one caller, against the same work as plain commands: one command at a time on one
 * connection (the serial workload's pattern), contestants interleaved in rounds, median of the rounds. Prints
 * wall time per call or cycle and the server's CPU per call or cycle (INFO cpu, user + sys):
 *
 *   npx ts-node --transpile-only test/bench/profile/serial-script-cost.ts [calls per round=3000] [rounds=11]
 *
 * Measured for the README (Serial): a write inside a script costs Redis ~12 µs more CPU than the same
 * command sent plain, where pipelined calls show only ~2–4 µs; the lock's two scripts against a plain
 * `SET NX PX` and redis-semaphore's compare-and-delete script.
 *
 * The cycles after those ask whether a fenced grant (the key and its fence counter's INCR in one step) can cost
 * less than our acquire script: as MULTI / SET NX PX / INCR / EXEC, and as SET NX PX and INCR written together
 * (not atomic: shown only as a floor), each followed by our release script, and a plain SET NX PX (no fence)
 * followed by it too. Each cycle's commands go out in one socket write, as the library's coalescing writes them.
 * The last column is the median over rounds of each cycle's difference to our two scripts in the same round.
 */
import Redis, { Command } from 'ioredis';
import { startBenchServers } from '../bench-servers';
import { rotated } from '../measure/rotated';
import { ACQUIRE_SCRIPT, RELEASE_SCRIPT } from '../../../lib/stores/redis/scripts';

const COMPARE_AND_DELETE = `if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end return 0`;

async function main(): Promise<void> {
  const [callsArg = '3000', roundsArg = '11'] = process.argv.slice(2);
  const calls = Number(callsArg);
  const rounds = Number(roundsArg);
  const servers = await startBenchServers();
  const client = new Redis(servers.single.url);
  const admin = new Redis(servers.single.url);
  try {
    const load = async (lua: string): Promise<string> => String(await client.script('LOAD', lua));
    const [acquire, release, compareAndDelete] = [
      await load(ACQUIRE_SCRIPT),
      await load(RELEASE_SCRIPT),
      await load(COMPARE_AND_DELETE),
    ];
    const [scriptGet, scriptSet] = [
      await load(`return redis.call('GET', KEYS[1])`),
      await load(`return redis.call('SET', KEYS[1], ARGV[1])`),
    ];
    const value = `${'x'.repeat(32)}:instance-1`;
    /** Sends `commands` in one socket write and resolves with their replies. */
    const written = (...commands: Command[]): Promise<unknown[]> => {
      const stream = (client as unknown as { stream: { cork(): void; uncork(): void } }).stream;
      stream.cork();
      const replies = commands.map((command) => client.sendCommand(command) as Promise<unknown>);
      stream.uncork();
      return Promise.all(replies);
    };
    const ourRelease = (): Promise<unknown> => client.evalsha(release, 2, '{c}', '{c}:a', value, 0, 0, 'c:{c}');
    const granted = (reply: unknown, what: string): void => {
      if (!reply) throw new Error(`${what}: the key was not free`);
    };
    const contestants: Record<string, () => Promise<unknown>> = {
      GET: () => client.get('{k}'),
      'GET in a script': () => client.evalsha(scriptGet, 1, '{k}'),
      SET: () => client.set('{k}', 'v'),
      'SET in a script': () => client.evalsha(scriptSet, 1, '{k}', 'v'),
      'cycle: SET NX PX + compare-and-delete script': async () => {
        await client.set('{c}', value, 'PX', 30_000, 'NX');
        await client.evalsha(compareAndDelete, 1, '{c}', value);
      },
      'cycle: our acquire + release scripts': async () => {
        await client.evalsha(acquire, 3, '{c}', '{c}:f', '{c}:a', value, 30_000);
        await ourRelease();
      },
      'cycle: MULTI SET NX PX, INCR EXEC + our release': async () => {
        const replies = await written(
          new Command('multi', []),
          new Command('set', ['{c}', value, 'NX', 'PX', 30_000]),
          new Command('incr', ['{c}:f']),
          new Command('exec', [], { replyEncoding: 'utf8' }),
        );
        granted((replies[3] as unknown[])[0], 'MULTI');
        await ourRelease();
      },
      'cycle: SET NX PX and INCR written together + our release': async () => {
        const [set] = await written(
          new Command('set', ['{c}', value, 'NX', 'PX', 30_000]),
          new Command('incr', ['{c}:f']),
        );
        granted(set, 'SET and INCR');
        await ourRelease();
      },
      'cycle: SET NX PX (no fence) + our release': async () => {
        granted(await client.set('{c}', value, 'PX', 30_000, 'NX'), 'SET');
        await ourRelease();
      },
    };
    const serverCpuMicros = async (): Promise<number> => {
      const info = String(await admin.info('cpu'));
      const sys = /used_cpu_sys:([\d.]+)/.exec(info)?.[1] ?? '0';
      const user = /used_cpu_user:([\d.]+)/.exec(info)?.[1] ?? '0';
      return (Number(sys) + Number(user)) * 1e6;
    };
    for (const run of Object.values(contestants)) for (let i = 0; i < 1000; i++) await run();
    const samples = new Map<string, { wall: number[]; server: number[] }>();
    for (let round = 0; round < rounds; round++) {
      // Rotated every round: no contestant always runs first or right after the same one.
      for (const [name, run] of rotated(Object.entries(contestants), round)) {
        const cpuBefore = await serverCpuMicros();
        const startedAt = performance.now();
        for (let i = 0; i < calls; i++) await run();
        const wall = ((performance.now() - startedAt) * 1000) / calls;
        const server = ((await serverCpuMicros()) - cpuBefore) / calls;
        const entry = samples.get(name) ?? { wall: [], server: [] };
        entry.wall.push(wall);
        entry.server.push(server);
        samples.set(name, entry);
      }
    }
    const median = (values: number[]): number => [...values].sort((a, b) => a - b)[values.length >> 1];
    const ours = samples.get('cycle: our acquire + release scripts');
    for (const [name, { wall, server }] of samples) {
      const paired =
        name.startsWith('cycle: ') && ours ? median(wall.map((each, round) => each - ours.wall[round])) : undefined;
      const versusOurs =
        paired === undefined ? '' : `   vs our scripts ${paired >= 0 ? '+' : ''}${paired.toFixed(1)} µs`;
      process.stdout.write(
        `${name.padEnd(58)} wall ${median(wall).toFixed(1).padStart(6)} µs   Redis CPU ${median(server).toFixed(1).padStart(5)} µs${versusOurs}\n`,
      );
    }
  } finally {
    client.disconnect();
    admin.disconnect();
    await servers.stop();
  }
}

void main();
