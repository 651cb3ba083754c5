import { ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { reapOnExit } from './child-reaper';
import { findFreePort } from './free-port';
import { type RedisProcess, startRedis } from './redis-server';
import { type RespReply, sendCommand } from './resp-client';

/** The server binary (sentinels run as `redis-server <conf> --sentinel`); REDIS_SERVER_BIN overrides it. */
const REDIS_SERVER = process.env.REDIS_SERVER_BIN ?? 'redis-server';
const HOST = '127.0.0.1';
const READY_TIMEOUT_MS = 15_000;

/**
 * Replication options of every data server here: a full sync starts at once (the default waits 5 s for
 * more replicas to join a diskless transfer).
 */
const REPLICATION_ARGS = ['--repl-diskless-sync', 'yes', '--repl-diskless-sync-delay', '0'];

/** A master and its replica, both real redis-server processes on 127.0.0.1. */
export interface MasterWithReplica {
  readonly master: RedisProcess;
  readonly replica: RedisProcess;
  stop(): Promise<void>;
}

/** Starts a master and one replica of it, and resolves once the replica is in sync. */
export async function startMasterWithReplica(): Promise<MasterWithReplica> {
  const master = await startRedis({ args: REPLICATION_ARGS });
  let replica: RedisProcess | undefined;
  try {
    replica = await startRedis({ args: [...REPLICATION_ARGS, '--replicaof', master.host, String(master.port)] });
    await waitForReplicaInSync(master, replica);
  } catch (error) {
    await Promise.all([master.stop(), replica?.stop()]);
    throw error;
  }
  const started = replica;
  return { master, replica: started, stop: async () => void (await Promise.all([master.stop(), started.stop()])) };
}

/** Resolves once `replica` reports its link to `master` up and `master` counts it as connected. */
export async function waitForReplicaInSync(
  master: RedisProcess,
  replica: RedisProcess,
  timeoutMs = READY_TIMEOUT_MS,
): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  let last = '';
  while (performance.now() < deadline) {
    const [ofReplica, ofMaster] = await Promise.all([
      replica.command('INFO', 'replication').catch(String),
      master.command('INFO', 'replication').catch(String),
    ]);
    last = `${String(ofReplica)}\n${String(ofMaster)}`;
    if (
      String(ofReplica).includes(`master_port:${master.port}\r\n`) &&
      String(ofReplica).includes('master_link_status:up') &&
      String(ofMaster).includes(`port=${replica.port},state=online`)
    ) {
      return;
    }
    await sleep(50);
  }
  throw new Error(`replica :${replica.port} not in sync with :${master.port} within ${timeoutMs} ms:\n${last}`);
}

/** One `redis-server --sentinel` process. */
export interface SentinelProcess {
  readonly host: string;
  readonly port: number;
  readonly pid: number | undefined;
  command(...args: string[]): Promise<RespReply>;
  /** SIGKILL by PID and removes its temp dir. Idempotent. */
  stop(): Promise<void>;
}

/**
 * A Sentinel-managed deployment: one master, one replica, three sentinels (quorum 2), every process on a
 * free port of 127.0.0.1. A master is judged down after 1 s; a failover then takes a few seconds.
 */
export interface SentinelDeployment {
  /** The name sentinels know the master by (`name` in ioredis' Sentinel options). */
  readonly masterName: string;
  /** `{ host, port }` of the three sentinels (`sentinels` in ioredis' Sentinel options). */
  readonly sentinels: readonly { host: string; port: number }[];
  /** The data server currently master, as this harness last saw it. */
  readonly master: RedisProcess;
  /** The data server currently replica. */
  readonly replica: RedisProcess;
  /**
   * Makes the master drop its replica's link (CLIENT KILL TYPE replica), as it does on its own once a
   * stalled replica has not acknowledged for repl-timeout (60 s by default). A stopped replica cannot
   * reconnect, so writes from now on live on the master only. Needed because SIGSTOP alone does not stop
   * replication: the replica's kernel still receives the stream into its socket buffer, and the process
   * reads it once resumed, even after the master died.
   */
  dropReplicaLink(): Promise<void>;
  /** Kills the master (SIGKILL by PID) and resolves once it has exited. */
  killMaster(): Promise<void>;
  /**
   * Resolves once every sentinel has switched to the replica as master, its failover over, and the replica
   * says so itself (role:master), with how long that took from `since` (performance.now()). The roles swap
   * in this object.
   */
  waitForFailover(since: number, timeoutMs?: number): Promise<number>;
  /**
   * Starts a fresh, empty server on the killed master's port as a replica of the new master (as an
   * orchestrator brings a failed node back) and resolves once it is in sync. Left to themselves, the
   * sentinels would reconfigure a returning old master too, but only on their 10 s INFO period.
   */
  restartOldMasterAsReplica(timeoutMs?: number): Promise<void>;
  stop(): Promise<void>;
}

export const SENTINEL_MASTER_NAME = 'lockmaster';

export async function startSentinelDeployment(): Promise<SentinelDeployment> {
  const { master, replica } = await startMasterWithReplica();
  const sentinels: SentinelProcess[] = [];
  const data: RedisProcess[] = [master, replica];
  const stopAll = async (): Promise<void> => {
    await Promise.all([...sentinels.map((sentinel) => sentinel.stop()), ...data.map((server) => server.stop())]);
  };
  try {
    for (let i = 0; i < 3; i++) sentinels.push(await startSentinel(master));
    await waitForSentinelsReady(sentinels);
  } catch (error) {
    await stopAll();
    throw error;
  }

  let currentMaster = master;
  let currentReplica = replica;
  let killedPort: number | undefined;
  return {
    masterName: SENTINEL_MASTER_NAME,
    sentinels: sentinels.map(({ host, port }) => ({ host, port })),
    get master() {
      return currentMaster;
    },
    get replica() {
      return currentReplica;
    },
    dropReplicaLink: async () => {
      await currentMaster.command('CLIENT', 'KILL', 'TYPE', 'replica');
    },
    killMaster: async () => {
      killedPort = currentMaster.port;
      await currentMaster.kill();
    },
    waitForFailover: async (since, timeoutMs = 30_000) => {
      const promoted = currentReplica;
      const deadline = since + timeoutMs;
      let last: unknown;
      while (performance.now() < deadline) {
        const views = await Promise.all(
          sentinels.map((sentinel) =>
            sentinel.command('SENTINEL', 'MASTER', SENTINEL_MASTER_NAME).then(masterView, String),
          ),
        );
        const role = await promoted.command('ROLE').catch(String);
        last = { views, role };
        // GET-MASTER-ADDR-BY-NAME already names the promoted replica while a sentinel is still reconfiguring
        // (failover_in_progress); a killed master brought back then was seen promoted as well (both servers
        // masters, no replica acknowledging anything). So: switched on every sentinel, its failover over.
        const switched = views.every(
          (view) => typeof view !== 'string' && view.port === promoted.port && view.flags === 'master',
        );
        if (switched && Array.isArray(role) && role[0] === 'master') {
          currentReplica = currentMaster;
          currentMaster = promoted;
          return performance.now() - since;
        }
        await sleep(50);
      }
      throw new Error(`no failover to :${promoted.port} within ${timeoutMs} ms: ${JSON.stringify(last)}`);
    },
    restartOldMasterAsReplica: async (timeoutMs = 20_000) => {
      if (killedPort === undefined) throw new Error('restartOldMasterAsReplica() before killMaster()');
      const port = killedPort;
      const restarted = await startRedis({
        args: [...REPLICATION_ARGS, '--replicaof', currentMaster.host, String(currentMaster.port)],
        choosePort: async () => port,
      });
      data.push(restarted);
      currentReplica = restarted;
      await waitForReplicaInSync(currentMaster, restarted, timeoutMs);
    },
    stop: stopAll,
  };
}

/** The address and flags of a `SENTINEL MASTER` reply (a flat list of field names and values). */
function masterView(reply: RespReply): { port: number; flags: string } | string {
  if (!Array.isArray(reply)) return String(reply);
  const field = (name: string): string => String(reply[reply.indexOf(name) + 1]);
  return { port: Number(field('port')), flags: field('flags') };
}

async function startSentinel(master: RedisProcess): Promise<SentinelProcess> {
  for (let attempt = 1; ; attempt++) {
    const port = await findFreePort();
    const dir = mkdtempSync(path.join(os.tmpdir(), 'redis-sentinel-'));
    const config = path.join(dir, 'sentinel.conf');
    // Sentinels rewrite their config file (discovered peers, epochs): it must be a file of their own.
    writeFileSync(
      config,
      [
        `port ${port}`,
        `bind ${HOST}`,
        'protected-mode no',
        'daemonize no',
        `dir ${dir}`,
        `sentinel monitor ${SENTINEL_MASTER_NAME} ${master.host} ${master.port} 2`,
        `sentinel down-after-milliseconds ${SENTINEL_MASTER_NAME} 1000`,
        `sentinel failover-timeout ${SENTINEL_MASTER_NAME} 5000`,
        `sentinel parallel-syncs ${SENTINEL_MASTER_NAME} 1`,
        '',
      ].join('\n'),
    );
    const sentinel = new SentinelServer(port, dir, config);
    try {
      await sentinel.launch();
      return sentinel;
    } catch (error) {
      await sentinel.stop();
      if (attempt >= 5) throw error;
    }
  }
}

class SentinelServer implements SentinelProcess {
  readonly host = HOST;
  private child: ChildProcess | undefined;
  private exited: Promise<void> = Promise.resolve();
  private logTail = '';

  constructor(
    readonly port: number,
    private readonly dir: string,
    private readonly config: string,
  ) {}

  get pid(): number | undefined {
    return this.child?.pid;
  }

  async launch(): Promise<void> {
    const child = spawn(REDIS_SERVER, [this.config, '--sentinel'], { stdio: ['ignore', 'pipe', 'pipe'] });
    this.child = child;
    const keepLog = (chunk: Buffer): void => {
      this.logTail = (this.logTail + chunk.toString()).slice(-4000);
    };
    child.stdout?.on('data', keepLog);
    child.stderr?.on('data', keepLog);
    child.unref();
    (child.stdout as { unref?: () => void } | null)?.unref?.();
    (child.stderr as { unref?: () => void } | null)?.unref?.();
    this.exited = new Promise((resolve) => child.once('exit', () => resolve()));
    reapOnExit(child, this.dir);
    const deadline = performance.now() + READY_TIMEOUT_MS;
    while (performance.now() < deadline) {
      if (child.exitCode !== null || child.signalCode !== null) {
        throw new Error(`sentinel on port ${this.port} exited at start:\n${this.logTail}`);
      }
      const info = await this.command('INFO', 'server').catch(() => undefined);
      if (
        typeof info === 'string' &&
        info.includes(`process_id:${child.pid}\r\n`) &&
        info.includes('redis_mode:sentinel')
      )
        return;
      await sleep(20);
    }
    throw new Error(`sentinel on port ${this.port} did not answer within ${READY_TIMEOUT_MS} ms:\n${this.logTail}`);
  }

  command(...args: string[]): Promise<RespReply> {
    return sendCommand(this.port, args, { host: HOST });
  }

  async stop(): Promise<void> {
    const child = this.child;
    if (child && child.exitCode === null && child.signalCode === null && child.pid !== undefined) {
      process.kill(child.pid, 'SIGKILL');
      await this.exited;
    }
    this.child = undefined;
    rmSync(this.dir, { recursive: true, force: true });
  }
}

/** Resolves once every sentinel knows the replica and the two other sentinels (they can then vote). */
async function waitForSentinelsReady(sentinels: readonly SentinelProcess[]): Promise<void> {
  const deadline = performance.now() + READY_TIMEOUT_MS;
  let last: unknown;
  while (performance.now() < deadline) {
    const states = await Promise.all(
      sentinels.map((sentinel) => sentinel.command('SENTINEL', 'MASTER', SENTINEL_MASTER_NAME).then(fields, String)),
    );
    last = states;
    const ready = states.every(
      (state) =>
        typeof state === 'object' &&
        state['num-slaves'] === '1' &&
        state['num-other-sentinels'] === String(sentinels.length - 1),
    );
    if (ready) return;
    await sleep(100);
  }
  throw new Error(`sentinels not ready within ${READY_TIMEOUT_MS} ms: ${JSON.stringify(last)}`);
}

/** A flat [field, value, …] reply as an object. */
function fields(reply: RespReply): Record<string, string> {
  const result: Record<string, string> = {};
  if (Array.isArray(reply))
    for (let i = 0; i + 1 < reply.length; i += 2) result[String(reply[i])] = String(reply[i + 1]);
  return result;
}
