import { ChildProcess, fork } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { ChildMessage, FaultMessage } from '../children/child-runtime';
import { reapOnExit } from '../../support/child-reaper';
import { compiledScript, nodeEnvironment } from './compiled-tree';

export interface ChildExit {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
}

export interface StartChildOptions {
  /** Passed to the child as JSON (RELIABILITY_CHILD_CONFIG). */
  readonly config?: unknown;
  /** Extra environment variables. */
  readonly env?: NodeJS.ProcessEnv;
  /** Extra node flags, e.g. ['--expose-gc']. */
  readonly execArgv?: readonly string[];
}

/**
 * One child process of this suite: a script of test/reliability/children, compiled (compiled-tree.ts) and
 * run by plain `node`, talking to the test over IPC. A fault the child reports (unhandled rejection,
 * uncaught exception, failed scenario) or its exit fails whatever the test is waiting for, with the
 * child's output attached.
 */
export class ChildScript {
  readonly exited: Promise<ChildExit>;
  private readonly inbox: ChildMessage[] = [];
  private readonly waiters = new Set<{
    type: string;
    resolve(message: ChildMessage): void;
    reject(error: Error): void;
  }>();
  private readonly faults: FaultMessage[] = [];
  private log = '';
  private exit: ChildExit | undefined;

  private constructor(
    private readonly child: ChildProcess,
    readonly name: string,
  ) {
    const keep = (chunk: Buffer): void => {
      this.log = (this.log + chunk.toString()).slice(-8000);
    };
    child.stdout?.on('data', keep);
    child.stderr?.on('data', keep);
    child.on('message', (message: ChildMessage) => this.deliver(message));
    this.exited = new Promise((resolve) => {
      child.once('exit', (code, signal) => {
        this.exit = { code, signal };
        for (const waiter of this.waiters) waiter.reject(this.failure(`exited (code ${code}, signal ${signal})`));
        this.waiters.clear();
        resolve(this.exit);
      });
    });
    // A child outlives no test run, even a crashed one (the reaper's watchdog removes this empty dir too).
    reapOnExit(child, mkdtempSync(path.join(os.tmpdir(), 'reliability-child-')));
  }

  /** Forks `test/reliability/children/<script>.ts` (compiled). */
  static start(script: string, options: StartChildOptions = {}): ChildScript {
    const child = fork(compiledScript(`test/reliability/children/${script}.ts`), [], {
      env: {
        ...process.env,
        ...nodeEnvironment(),
        ...options.env,
        RELIABILITY_CHILD_CONFIG: JSON.stringify(options.config ?? {}),
        NO_COLOR: '1',
      },
      execArgv: ['--enable-source-maps', ...(options.execArgv ?? [])],
      stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
    });
    return new ChildScript(child, script);
  }

  get pid(): number {
    return this.child.pid as number;
  }

  /** Faults the child reported so far (unhandled rejections and the like). */
  get reportedFaults(): readonly FaultMessage[] {
    return this.faults;
  }

  /** What the child printed (the last 8000 characters). */
  output(): string {
    return this.log;
  }

  send(message: ChildMessage): void {
    this.child.send(message);
  }

  /** The next message of `type` (one already received counts); rejects on a fault, an exit or after `timeoutMs`. */
  next<T extends ChildMessage>(type: T['type'], timeoutMs: number): Promise<T> {
    const index = this.inbox.findIndex((message) => message.type === type);
    if (index >= 0) return Promise.resolve(this.inbox.splice(index, 1)[0] as T);
    if (this.faults.length > 0) return Promise.reject(this.failure(`reported a fault`));
    if (this.exit)
      return Promise.reject(this.failure(`had exited (code ${this.exit.code}, signal ${this.exit.signal})`));
    return new Promise<T>((resolve, reject) => {
      const waiter = {
        type,
        resolve: (message: ChildMessage) => {
          clearTimeout(timer);
          resolve(message as T);
        },
        reject: (error: Error) => {
          clearTimeout(timer);
          reject(error);
        },
      };
      const timer = setTimeout(() => {
        this.waiters.delete(waiter);
        reject(this.failure(`sent no '${type}' within ${timeoutMs} ms`));
      }, timeoutMs);
      this.waiters.add(waiter);
    });
  }

  /** Every message of `type` received and not taken yet, in the order they came; takes them. */
  drain<T extends ChildMessage>(type: T['type']): T[] {
    const taken = this.inbox.filter((message) => message.type === type) as T[];
    if (taken.length > 0)
      this.inbox.splice(0, this.inbox.length, ...this.inbox.filter((message) => message.type !== type));
    return taken;
  }

  /** Sends a signal (SIGSTOP, SIGCONT, SIGTERM...) to the child. */
  signal(signal: NodeJS.Signals): void {
    if (!this.exit) process.kill(this.pid, signal);
  }

  /** Resolves with how the child exited, or rejects when it is still running after `timeoutMs`. */
  async exitWithin(timeoutMs: number): Promise<ChildExit> {
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(this.failure(`did not exit within ${timeoutMs} ms`)), timeoutMs);
    });
    try {
      return await Promise.race([this.exited, late]);
    } finally {
      clearTimeout(timer);
    }
  }

  /** SIGKILL (after SIGCONT, in case it is stopped) unless it has exited. */
  async kill(): Promise<void> {
    if (this.exit) return;
    this.child.kill('SIGCONT');
    this.child.kill('SIGKILL');
    await this.exited;
  }

  private deliver(message: ChildMessage): void {
    if (message.type === 'fault') {
      this.faults.push(message as FaultMessage);
      for (const waiter of this.waiters) waiter.reject(this.failure('reported a fault'));
      this.waiters.clear();
      return;
    }
    for (const waiter of this.waiters) {
      if (waiter.type !== message.type) continue;
      this.waiters.delete(waiter);
      waiter.resolve(message);
      return;
    }
    this.inbox.push(message);
  }

  private failure(what: string): Error {
    const faults = this.faults.map((fault) => `[${fault.kind}] ${fault.detail}`).join('\n');
    return new Error(
      `child ${this.name} (pid ${this.child.pid}) ${what}` +
        (faults ? `\n--- faults ---\n${faults}` : '') +
        `\n--- output ---\n${this.log || '(none)'}`,
    );
  }
}

/** Starts children for the running test and SIGKILLs whatever is left of them after it (afterEach). */
export function trackChildren(): { start(script: string, options?: StartChildOptions): ChildScript } {
  const children: ChildScript[] = [];
  afterEach(async () => {
    await Promise.all(children.splice(0).map((child) => child.kill()));
  });
  return {
    start: (script, options) => {
      const child = ChildScript.start(script, options);
      children.push(child);
      return child;
    },
  };
}
