import Redis from 'ioredis';
import type { ChildMessage } from '../children/child-runtime';
import { type RedisProcess, startRedis } from '../../support/redis-server';
import { ChildScript } from './child-process';

/**
 * What the history checkers (history.spec.ts, primitives-history.spec.ts) run on: a data Redis of its own,
 * where the workers leave their records, and 5 lock servers (`servers[0]` is the single-Redis store,
 * `servers[0..4]` Redlock's nodes). Started before the file's tests, stopped after them.
 */
export interface HistoryServers {
  readonly data: RedisProcess;
  readonly servers: readonly RedisProcess[];
  /** A client of the data Redis, to read the records. */
  readonly dataClient: Redis;
}

export function historyServers(): HistoryServers {
  const started: { data?: RedisProcess; servers: RedisProcess[]; dataClient?: Redis } = { servers: [] };
  beforeAll(async () => {
    started.data = await startRedis();
    for (let i = 0; i < 5; i++) started.servers.push(await startRedis());
    started.dataClient = new Redis(started.data.url);
  });
  afterAll(async () => {
    started.dataClient?.disconnect();
    await Promise.all(
      [started.data, ...started.servers].filter((server) => server !== undefined).map((server) => server.stop()),
    );
  });
  return {
    get data() {
      return started.data as RedisProcess;
    },
    servers: started.servers,
    get dataClient() {
      return started.dataClient as Redis;
    },
  };
}

/** Children started once for a spec file, each serving one run after another (see runAll). */
export interface WorkerFleet {
  /**
   * One run: child i gets `{ type: 'run', config: configs[i] }`, answers 'ready' when set up; once all are,
   * they get 'go' together; resolves with their 'done' reports.
   */
  runAll<Report extends ChildMessage>(configs: readonly unknown[], stepTimeoutMs: number): Promise<Report[]>;
}

/** `count` children of `script`, started before the file's tests and killed after them. */
export function workerFleet(script: string, count: number): WorkerFleet {
  const children: ChildScript[] = [];
  beforeAll(() => {
    for (let i = 0; i < count; i++) children.push(ChildScript.start(script));
  });
  afterAll(async () => {
    await Promise.all(children.splice(0).map((child) => child.kill()));
  });
  return {
    runAll: async <Report extends ChildMessage>(configs: readonly unknown[], stepTimeoutMs: number) => {
      if (configs.length !== children.length)
        throw new Error(`${configs.length} configs for ${children.length} children`);
      children.forEach((child, index) => child.send({ type: 'run', config: configs[index] } as ChildMessage));
      await Promise.all(children.map((child) => child.next('ready', stepTimeoutMs)));
      for (const child of children) child.send({ type: 'go' });
      return Promise.all(children.map((child) => child.next<Report>('done', stepTimeoutMs)));
    },
  };
}
