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
 */
import Redis from 'ioredis';
import { startBenchServers } from '../bench-servers';
import { ACQUIRE_SCRIPT, RELEASE_SCRIPT } from '../../../lib/stores/redis/lock-scripts';

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
    const [acquire, release, compareAndDelete] = [await load(ACQUIRE_SCRIPT), await load(RELEASE_SCRIPT), await load(COMPARE_AND_DELETE)];
    const [scriptGet, scriptSet] = [await load(`return redis.call('GET', KEYS[1])`), await load(`return redis.call('SET', KEYS[1], ARGV[1])`)];
    const value = `${'x'.repeat(32)}:instance-1`;
    const contestants: Record<string, () => Promise<unknown>> = {
      'GET': () => client.get('{k}'),
      'GET in a script': () => client.evalsha(scriptGet, 1, '{k}'),
      'SET': () => client.set('{k}', 'v'),
      'SET in a script': () => client.evalsha(scriptSet, 1, '{k}', 'v'),
      'cycle: SET NX PX + compare-and-delete script': async () => {
        await client.set('{c}', value, 'PX', 30_000, 'NX');
        await client.evalsha(compareAndDelete, 1, '{c}', value);
      },
      'cycle: our acquire + release scripts': async () => {
        await client.evalsha(acquire, 3, '{c}', '{c}:f', '{c}:a', value, 30_000);
        await client.evalsha(release, 2, '{c}', '{c}:a', value, 0, 0, 'c:{c}');
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
      for (const [name, run] of Object.entries(contestants)) {
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
    for (const [name, { wall, server }] of samples) {
      process.stdout.write(`${name.padEnd(46)} wall ${median(wall).toFixed(1).padStart(6)} µs   Redis CPU ${median(server).toFixed(1).padStart(5)} µs\n`);
    }
  } finally {
    client.disconnect();
    admin.disconnect();
    await servers.stop();
  }
}

void main();
