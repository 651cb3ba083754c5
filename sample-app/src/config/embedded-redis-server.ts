import { spawn, type ChildProcess } from 'node:child_process';
import net from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';

const HOST = '127.0.0.1';
const START_TIMEOUT_MS = 10_000;

/** The redis-server binary was not found (spawn failed with ENOENT). */
export class RedisServerNotFoundError extends Error {}

/**
 * A private redis-server child process on 127.0.0.1 and a free port, without persistence, so that the
 * sample app (and the race demo) run on a real Redis with nothing configured. It is killed when this
 * process exits, whichever way the exit is reached through Node (normal end, process.exit, an uncaught
 * error); Ctrl-C reaches it too, as it shares the terminal's process group.
 */
export class EmbeddedRedisServer {
  private exited: Promise<void>;

  private constructor(
    private readonly child: ChildProcess,
    readonly port: number,
  ) {
    this.exited = new Promise((resolve) => {
      if (child.exitCode !== null || child.signalCode !== null) resolve();
      else child.once('exit', () => resolve());
    });
  }

  get url(): string {
    return `redis://${HOST}:${this.port}`;
  }

  get pid(): number | undefined {
    return this.child.pid;
  }

  /**
   * Starts `binary` (REDIS_SERVER_BIN, default `redis-server` from the PATH) and resolves once it answers
   * PING. Rejects with RedisServerNotFoundError when the binary is not there.
   */
  static async start(binary = process.env.REDIS_SERVER_BIN ?? 'redis-server'): Promise<EmbeddedRedisServer> {
    for (let attempt = 1; ; attempt++) {
      const port = await findFreePort();
      const child = spawn(
        binary,
        ['--port', String(port), '--bind', HOST, '--save', '', '--appendonly', 'no', '--protected-mode', 'no'],
        { stdio: ['ignore', 'pipe', 'pipe'] },
      );
      const server = new EmbeddedRedisServer(child, port);
      const killOnExit = (): void => void child.kill('SIGKILL');
      process.once('exit', killOnExit);
      child.once('exit', () => process.off('exit', killOnExit));
      try {
        await server.waitUntilReady(binary);
        // It must not keep this process alive on its own: the exit hook above takes it down.
        child.unref();
        (child.stdout as { unref?: () => void } | null)?.unref?.();
        (child.stderr as { unref?: () => void } | null)?.unref?.();
        return server;
      } catch (error) {
        await server.stop();
        // Another process may take the port between choosing and binding it: pick another.
        if (!(error instanceof PortTakenError) || attempt >= 5) throw error;
      }
    }
  }

  /** SIGKILL (no persistence, so nothing to flush) and wait for the exit. Idempotent. */
  async stop(): Promise<void> {
    // A binary that could not be spawned has no process, and never emits 'exit'.
    if (this.child.pid === undefined) return;
    if (this.child.exitCode === null && this.child.signalCode === null) this.child.kill('SIGKILL');
    await this.exited;
  }

  private async waitUntilReady(binary: string): Promise<void> {
    let log = '';
    this.child.stdout?.on('data', (chunk: Buffer) => (log = (log + chunk.toString()).slice(-2000)));
    this.child.stderr?.on('data', (chunk: Buffer) => (log = (log + chunk.toString()).slice(-2000)));
    let spawnError: NodeJS.ErrnoException | undefined;
    this.child.once('error', (error) => (spawnError = error));
    const deadline = performance.now() + START_TIMEOUT_MS;
    while (performance.now() < deadline) {
      if (spawnError?.code === 'ENOENT') throw new RedisServerNotFoundError(`${binary} is not on the PATH`);
      if (spawnError) throw new Error(`cannot run ${binary}: ${spawnError.message}`);
      if (this.child.exitCode !== null || this.child.signalCode !== null) {
        if (/address already in use/i.test(log)) throw new PortTakenError(`port ${this.port} was taken`);
        throw new Error(`${binary} exited at start:\n${log}`);
      }
      const answeringPid = await serverPid(this.port);
      if (answeringPid !== undefined) {
        // The process that answers must be our child, not another one that had the port already.
        if (answeringPid === this.child.pid) return;
        throw new PortTakenError(`port ${this.port} is answered by pid ${answeringPid}`);
      }
      await sleep(20);
    }
    throw new Error(`${binary} did not answer on port ${this.port} within ${START_TIMEOUT_MS} ms:\n${log}`);
  }
}

class PortTakenError extends Error {}

/** A port that nothing listened on a moment ago (the OS picks it for a server bound on port 0). */
export function findFreePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.unref();
    server.on('error', reject);
    server.listen(0, HOST, () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

/** The pid of the Redis server answering on `port` (from INFO server), or undefined when none answers. */
function serverPid(port: number): Promise<number | undefined> {
  return new Promise((resolve) => {
    const socket = net.connect({ host: HOST, port });
    let reply = '';
    const done = (pid: number | undefined): void => {
      socket.destroy();
      resolve(pid);
    };
    socket.setTimeout(500, () => done(undefined));
    socket.once('error', () => done(undefined));
    socket.once('connect', () => socket.write('INFO server\r\n'));
    socket.on('data', (chunk) => {
      reply += chunk.toString();
      const match = /process_id:(\d+)\r\n/.exec(reply);
      if (match) done(Number(match[1]));
      else if (reply.startsWith('-')) done(undefined);
    });
  });
}
