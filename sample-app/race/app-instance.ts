import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';

const REPO_ROOT = path.resolve(__dirname, '..', '..');
const MAIN = path.join(REPO_ROOT, 'sample-app', 'src', 'main.ts');
const START_TIMEOUT_MS = 60_000;
const STOP_TIMEOUT_MS = 8_000;

export interface AppInstanceOptions {
  readonly port: number;
  readonly redisUrl: string;
  readonly locks: boolean;
  /** More environment for the instance (e.g. the interest job's schedule). */
  readonly env?: Readonly<Record<string, string>>;
}

/** One line the instance logged, with the time the race saw it. */
export interface LogLine {
  readonly at: number;
  readonly text: string;
}

/**
 * One instance of the sample app as a child process (ts-node, like `npm run sample`), on its own port of
 * 127.0.0.1, sharing the race's Redis. Its output is kept, not printed, except when it fails to start.
 */
export class AppInstance {
  readonly lines: LogLine[] = [];
  private readonly exited: Promise<void>;
  private partial = '';

  private constructor(
    private readonly child: ChildProcess,
    readonly port: number,
  ) {
    this.exited = new Promise((resolve) => child.once('exit', () => resolve()));
    const keep = (chunk: Buffer): void => {
      const text = this.partial + chunk.toString();
      const complete = text.split('\n');
      this.partial = complete.pop() ?? '';
      for (const line of complete) this.lines.push({ at: Date.now(), text: line });
    };
    child.stdout?.on('data', keep);
    child.stderr?.on('data', keep);
    // Whatever happens to the race, its instances go with it.
    const killOnExit = (): void => void child.kill('SIGKILL');
    process.once('exit', killOnExit);
    child.once('exit', () => process.off('exit', killOnExit));
  }

  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  /** Starts the instance and resolves once GET /health answers 200. */
  static async start(options: AppInstanceOptions): Promise<AppInstance> {
    const child = spawn(process.execPath, ['-r', 'ts-node/register/transpile-only', MAIN], {
      cwd: REPO_ROOT,
      stdio: ['ignore', 'pipe', 'pipe'],
      env: {
        ...process.env,
        TS_NODE_PROJECT: path.join(REPO_ROOT, 'sample-app', 'tsconfig.json'),
        PORT: String(options.port),
        REDIS_URL: options.redisUrl,
        REDIS_NODES: '',
        LOCK_STORE: '',
        LOCKS: options.locks ? 'on' : 'off',
        // The interest job still runs (one instance per tick, see the log), but credits nothing, so the
        // total balance must stay exactly what was deposited.
        INTEREST_RATE: '0',
        NO_COLOR: '1',
        ...options.env,
      },
    });
    const instance = new AppInstance(child, options.port);
    try {
      await instance.waitUntilHealthy();
      return instance;
    } catch (error) {
      await instance.stop();
      const output = instance.output();
      throw new Error(
        `${(error as Error).message}\n--- output of the instance on port ${options.port} ---\n${output}`,
        { cause: error },
      );
    }
  }

  /** The lines logged so far. */
  output(): string {
    return this.lines.map((line) => line.text).join('\n') + this.partial;
  }

  /** Sends `signal` (SIGKILL: a crash; SIGSTOP / SIGCONT: a freeze and a thaw) unless the instance has exited. */
  signal(signal: NodeJS.Signals): void {
    if (this.child.exitCode === null && this.child.signalCode === null) this.child.kill(signal);
  }

  /** SIGTERM (the app releases its locks and exits), SIGKILL if it takes too long. */
  async stop(): Promise<void> {
    if (this.child.exitCode !== null || this.child.signalCode !== null) return;
    // A frozen instance (SIGSTOP) would never handle the SIGTERM.
    this.child.kill('SIGCONT');
    this.child.kill('SIGTERM');
    const stopped = await Promise.race([this.exited.then(() => true), sleep(STOP_TIMEOUT_MS, false)]);
    if (!stopped) {
      this.child.kill('SIGKILL');
      await this.exited;
    }
  }

  private async waitUntilHealthy(): Promise<void> {
    const deadline = Date.now() + START_TIMEOUT_MS;
    while (Date.now() < deadline) {
      if (this.child.exitCode !== null || this.child.signalCode !== null) {
        throw new Error(`the instance on port ${this.port} exited while starting`);
      }
      try {
        const response = await fetch(`${this.url}/health`, { signal: AbortSignal.timeout(1_000) });
        if (response.status === 200) return;
      } catch {
        // Not listening yet.
      }
      await sleep(200);
    }
    throw new Error(`the instance on port ${this.port} did not answer /health within ${START_TIMEOUT_MS} ms`);
  }
}
