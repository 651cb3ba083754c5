import { ChildProcess, spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { reapOnExit } from './child-reaper';
import { findFreePort } from './free-port';
import { RespReply, sendCommand } from './resp-client';

/** The server binary; REDIS_SERVER_BIN overrides PATH lookup. */
const REDIS_SERVER = process.env.REDIS_SERVER_BIN ?? 'redis-server';
const HOST = '127.0.0.1';
const START_TIMEOUT_MS = 10_000;

/** A real redis-server child process on 127.0.0.1, with no persistence, for one test file. */
export interface RedisProcess {
  readonly host: string;
  readonly port: number;
  /** `redis://127.0.0.1:<port>` */
  readonly url: string;
  /** Pid of the current server process, undefined once killed. */
  readonly pid: number | undefined;
  /** Freezes the server (SIGSTOP): connections stay open but nothing is answered. */
  pause(): void;
  /** Unfreezes a paused server (SIGCONT). */
  resume(): void;
  /** SIGKILL, resolved once the process has exited. The port is then refused. */
  kill(): Promise<void>;
  /** Kills the server if it runs and starts a new one on the same port, with empty data. */
  restart(): Promise<void>;
  /** Kills the server and removes its temp dir. Idempotent. */
  stop(): Promise<void>;
  /** Sends one command on a fresh connection (no retries, no queue). */
  command(...args: string[]): Promise<RespReply>;
}

export interface StartRedisOptions {
  /** Extra redis-server arguments, e.g. ['--cluster-enabled', 'yes']. */
  readonly args?: readonly string[];
  /** How to pick a port; a new one is picked after a collision. Default: a free port from the OS. */
  readonly choosePort?: () => Promise<number>;
}

/** Thrown when the port was taken between choosing it and the server binding it. */
class PortCollisionError extends Error {}

/**
 * Starts redis-server on a free port of 127.0.0.1 and resolves once it answers PING. The caller must
 * stop() it (afterAll); a crashed test process still takes it down (see child-reaper).
 */
export async function startRedis(options: StartRedisOptions = {}): Promise<RedisProcess> {
  const choosePort = options.choosePort ?? findFreePort;
  for (let attempt = 1; ; attempt++) {
    const server = new RedisServerProcess(await choosePort(), options.args ?? []);
    try {
      await server.launch();
      return server;
    } catch (error) {
      await server.stop();
      if (!(error instanceof PortCollisionError) || attempt >= 5) throw error;
    }
  }
}

class RedisServerProcess implements RedisProcess {
  readonly host = HOST;
  readonly url: string;
  private readonly dir = mkdtempSync(path.join(os.tmpdir(), 'redis-test-'));
  private child: ChildProcess | undefined;
  private exited: Promise<void> = Promise.resolve();
  private logTail = '';
  private stopped = false;

  constructor(
    readonly port: number,
    private readonly args: readonly string[],
  ) {
    this.url = `redis://${HOST}:${port}`;
  }

  get pid(): number | undefined {
    return this.child?.pid;
  }

  /** Spawns the server and waits until it is this process that answers on the port. */
  async launch(): Promise<void> {
    const args = [
      '--port',
      String(this.port),
      '--bind',
      HOST,
      '--save',
      '',
      '--appendonly',
      'no',
      '--protected-mode',
      'no',
      '--daemonize',
      'no',
      '--dir',
      this.dir,
      ...this.args.map((arg) => arg.replaceAll('{dir}', this.dir)),
    ];
    const child = spawn(REDIS_SERVER, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    this.child = child;
    this.logTail = '';
    const keepLog = (chunk: Buffer): void => {
      this.logTail = (this.logTail + chunk.toString()).slice(-4000);
    };
    child.stdout?.on('data', keepLog);
    child.stderr?.on('data', keepLog);
    // A forgotten server must not keep Jest alive; the exit hook and watchdog still kill it.
    child.unref();
    (child.stdout as { unref?: () => void } | null)?.unref?.();
    (child.stderr as { unref?: () => void } | null)?.unref?.();
    const spawnFailed = new Promise<Error>((resolve) => child.once('error', resolve));
    this.exited = new Promise((resolve) => child.once('exit', () => resolve()));
    reapOnExit(child, this.dir);
    await this.waitUntilReady(child, spawnFailed);
  }

  private async waitUntilReady(child: ChildProcess, spawnFailed: Promise<Error>): Promise<void> {
    let spawnError: Error | undefined;
    void spawnFailed.then((error) => (spawnError = error));
    const deadline = performance.now() + START_TIMEOUT_MS;
    while (performance.now() < deadline) {
      if (spawnError) throw new Error(`cannot run ${REDIS_SERVER}: ${spawnError.message}`);
      if (child.exitCode !== null || child.signalCode !== null) {
        if (/address already in use/i.test(this.logTail)) {
          throw new PortCollisionError(`port ${this.port} was taken`);
        }
        throw new Error(`redis-server on port ${this.port} exited at start:\n${this.logTail}`);
      }
      try {
        // PONG alone could come from another process that won the port: check it is our child answering.
        const info = await this.command('INFO', 'server');
        if (typeof info === 'string' && info.includes(`process_id:${child.pid}\r\n`)) return;
        if (typeof info === 'string') throw new PortCollisionError(`port ${this.port} answered by another process`);
      } catch (error) {
        if (error instanceof PortCollisionError) throw error;
        // Not listening yet.
      }
      await sleep(20);
    }
    throw new Error(`redis-server on port ${this.port} did not answer within ${START_TIMEOUT_MS} ms:\n${this.logTail}`);
  }

  pause(): void {
    this.signal('SIGSTOP');
  }

  resume(): void {
    this.signal('SIGCONT');
  }

  async kill(): Promise<void> {
    this.signal('SIGKILL');
    await this.exited;
    this.child = undefined;
  }

  async restart(): Promise<void> {
    if (this.stopped) throw new Error('restart() after stop()');
    await this.kill();
    // Empty data: a fresh dir content (it only ever holds a cluster config file).
    rmSync(this.dir, { recursive: true, force: true });
    mkdirSync(this.dir, { recursive: true });
    // The port was ours a moment ago; only a racing process could take it. Retry briefly in that case.
    for (let attempt = 1; ; attempt++) {
      try {
        await this.launch();
        return;
      } catch (error) {
        await this.kill();
        if (!(error instanceof PortCollisionError) || attempt >= 20) throw error;
        await sleep(100);
      }
    }
  }

  async stop(): Promise<void> {
    this.stopped = true;
    await this.kill();
    rmSync(this.dir, { recursive: true, force: true });
  }

  command(...args: string[]): Promise<RespReply> {
    return sendCommand(this.port, args, { host: HOST });
  }

  private signal(signal: NodeJS.Signals): void {
    const child = this.child;
    if (!child || child.exitCode !== null || child.signalCode !== null || child.pid === undefined) return;
    process.kill(child.pid, signal);
  }
}

/** Starts `count` servers; if one fails to start, stops those already started. */
export async function startRedisServers(count: number): Promise<RedisProcess[]> {
  const servers: RedisProcess[] = [];
  try {
    for (let i = 0; i < count; i++) servers.push(await startRedis());
  } catch (error) {
    await Promise.all(servers.map((server) => server.stop()));
    throw error;
  }
  return servers;
}
