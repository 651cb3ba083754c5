import { spawn } from 'node:child_process';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Cluster } from 'ioredis';
import { commandStats, resetStats, statsDelta } from './redis-stats';
import { startRedisCluster } from './redis-cluster';
import { RedisProcess, startRedis } from './redis-server';

/** Whether a process with this pid still exists (signal 0 only checks). */
function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

async function waitUntil(condition: () => boolean, timeoutMs: number): Promise<boolean> {
  const deadline = performance.now() + timeoutMs;
  while (performance.now() < deadline) {
    if (condition()) return true;
    await sleep(50);
  }
  return condition();
}

describe('test harness: redis-server processes', () => {
  let server: RedisProcess;

  beforeAll(async () => {
    server = await startRedis();
  });
  afterAll(() => server.stop());

  it('starts a server on a free port of 127.0.0.1, without persistence, answering PING', async () => {
    expect(server.port).not.toBe(6379);
    expect(server.url).toBe(`redis://127.0.0.1:${server.port}`);
    expect(await server.command('PING')).toBe('PONG');
    expect(await server.command('CONFIG', 'GET', 'save')).toEqual(['save', '']);
    expect(await server.command('CONFIG', 'GET', 'appendonly')).toEqual(['appendonly', 'no']);
    expect(await server.command('CONFIG', 'GET', 'bind')).toEqual(['bind', '127.0.0.1']);
  });

  it('starts independent servers on distinct ports', async () => {
    const other = await startRedis();
    try {
      expect(other.port).not.toBe(server.port);
      await server.command('SET', 'where', 'first');
      expect(await other.command('GET', 'where')).toBeNull();
    } finally {
      await other.stop();
    }
  });

  it('pause() freezes the server and resume() brings it back', async () => {
    server.pause();
    try {
      await expect(server.command('PING')).rejects.toThrow(/did not answer/);
    } finally {
      server.resume();
    }
    expect(await server.command('PING')).toBe('PONG');
  });

  it('kill() takes the port down; restart() brings up an empty server on the same port', async () => {
    const port = server.port;
    const oldPid = server.pid as number;
    await server.command('SET', 'survives', 'no');
    await server.kill();
    expect(server.pid).toBeUndefined();
    expect(isAlive(oldPid)).toBe(false);
    await expect(server.command('PING')).rejects.toThrow(/ECONNREFUSED/);

    await server.restart();
    expect(server.port).toBe(port);
    expect(server.pid).not.toBe(oldPid);
    expect(await server.command('GET', 'survives')).toBeNull();
  });

  it('restart() also works on a paused server', async () => {
    server.pause();
    await server.restart();
    expect(await server.command('PING')).toBe('PONG');
  });

  it('reads and resets INFO commandstats', async () => {
    await resetStats(server.url);
    const before = await commandStats(server.url);
    await server.command('SET', 'a', '1');
    await server.command('SET', 'b', '2');
    await server.command('GET', 'a');
    const after = await commandStats(server.url);
    // The first read's INFO shows up in the second read.
    expect(statsDelta(before, after)).toEqual({ set: 2, get: 1, info: 1 });
    await resetStats(server.url);
    expect((await commandStats(server.url)).set).toBeUndefined();
  });
});

describe('test harness: leftover servers', () => {
  /** Runs a script that starts a server and prints its pid, and returns the script's process and that pid. */
  async function startOrphanMaker(script: string): Promise<{ pid: number; maker: ReturnType<typeof spawn> }> {
    const maker = spawn(process.execPath, [require.resolve('ts-node/dist/bin.js'), '--transpile-only', '-e', script], {
      cwd: path.resolve(__dirname, '../..'),
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    const pid = await new Promise<number>((resolve, reject) => {
      let out = '';
      maker.stdout?.on('data', (chunk: Buffer) => {
        out += chunk.toString();
        const match = /pid=(\d+)/.exec(out);
        if (match) resolve(Number(match[1]));
      });
      maker.once('exit', (code) => reject(new Error(`script exited (${code}) before printing a pid: ${out}`)));
    });
    return { pid, maker };
  }

  it('a test process that exits without stop() leaves no server behind', async () => {
    const { pid } = await startOrphanMaker(
      "require('./test/support/redis-server').startRedis().then((s) => { console.log('pid=' + s.pid); process.exit(0); })",
    );
    expect(await waitUntil(() => !isAlive(pid), 3000)).toBe(true);
  });

  it('a test process that is SIGKILLed leaves no server behind', async () => {
    const { pid, maker } = await startOrphanMaker(
      "require('./test/support/redis-server').startRedis().then((s) => { console.log('pid=' + s.pid); setInterval(() => {}, 1000); })",
    );
    expect(isAlive(pid)).toBe(true);
    maker.kill('SIGKILL');
    expect(await waitUntil(() => !isAlive(pid), 5000)).toBe(true);
  });
});

describe('test harness: redis cluster', () => {
  it('starts a 3-master cluster that an ioredis Cluster client can use across slots', async () => {
    const cluster = await startRedisCluster(3);
    const client = new Cluster([...cluster.startupNodes]);
    try {
      expect(cluster.nodes).toHaveLength(3);
      for (const node of cluster.nodes) {
        expect(String(await node.command('CLUSTER', 'INFO'))).toContain('cluster_state:ok');
      }
      // Keys spread over the three masters' slot ranges.
      const keys = Array.from({ length: 30 }, (_, i) => `key-${i}`);
      await Promise.all(keys.map((key) => client.set(key, key)));
      expect(await Promise.all(keys.map((key) => client.get(key)))).toEqual(keys);
      const perNode = await Promise.all(cluster.nodes.map((node) => node.command('DBSIZE')));
      expect(perNode.every((count) => Number(count) > 0)).toBe(true);
    } finally {
      client.disconnect();
      await cluster.stop();
    }
  });
});
