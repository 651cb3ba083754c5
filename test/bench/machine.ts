import os from 'node:os';
import type { RedisProcess } from '../support/redis-server';

export interface Machine {
  readonly cpus: number;
  readonly cpuModel: string;
  readonly memoryGb: number;
  readonly os: string;
  readonly node: string;
  readonly redis: string;
  /** 1-minute load average when the run started: other processes share the machine. */
  readonly loadAverage: number;
}

/** What the figures were measured on, for the report. */
export async function describeMachine(server: RedisProcess): Promise<Machine> {
  const info = String(await server.command('INFO', 'server'));
  const redis = /redis_version:([^\r\n]+)/.exec(info)?.[1] ?? 'unknown';
  return {
    cpus: os.availableParallelism(),
    cpuModel: os.cpus()[0]?.model.trim() ?? 'unknown',
    memoryGb: Math.round(os.totalmem() / 2 ** 30),
    os: `${os.type()} ${os.release()} ${os.arch()}`,
    node: process.version,
    redis,
    loadAverage: os.loadavg()[0],
  };
}
