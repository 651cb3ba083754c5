// Every use of ioredis internals, each checked once for the shape the adapter expects; without it, ioredis' public API.
import type { Command } from 'ioredis';
import type { ServerInfo } from './batch-fit';
import type { IoredisConnection, IoredisPipeline } from './ioredis-connection';
import type { CommandClass } from './script-command';
import { noop } from '../../../util/noop';

/**
 * Which of ioredis' internals a connection offers with the shape this adapter was written against (ioredis 5
 * and 6; iovalkey shares the queue and the socket). Each is what makes a path faster; without it the adapter
 * takes ioredis' public API for that path, slower and never broken:
 * - `ownCommands`: commands this library builds (ScriptCommand, see script-command.ts) on the connection's own
 *   Command class (that of whichever copy of ioredis, or of iovalkey, made it: an application's
 *   ioredis 5 lent to the library that loads ioredis 6 is as fast as the library's own), written by it through
 *   Command#toWritable(socket), and queued on its pipelines with Pipeline#sendCommand. Without it: scripts
 *   through defineCommand (EVALSHA, EVAL on NOSCRIPT), the script + WAIT pipeline by Pipeline#evalsha, and no
 *   batches of script calls.
 * - `readyCheck`: Redis#_readyCheck(callback), INFO parsed before the connection is ready, whose answer says
 *   whether the server takes batches. Without it: no batches.
 * - `commandQueue`: Redis#commandQueue, the commands sent and not answered yet. Without it: the connection is
 *   presumed busy (a tick's first command is corked with the rest).
 * - `stream`: Redis#stream, the socket, corked to write a tick's commands at once. Without it: each command is
 *   written as ioredis writes it.
 */
export interface InternalsFound {
  readonly ownCommands: boolean;
  readonly readyCheck: boolean;
  readonly commandQueue: boolean;
  readonly stream: boolean;
}

/** What a connection offers when none of the internals is there: ioredis' public API only. */
export const PUBLIC_API_ONLY: InternalsFound = Object.freeze({
  ownCommands: false,
  readyCheck: false,
  commandQueue: false,
  stream: false,
});

/** A socket that can hold writes back (Node's Writable#cork and #uncork). */
export interface Corkable {
  cork(): void;
  uncork(): void;
}

/** ioredis' ready check's callback: INFO's fields, parsed. */
export type ReadyCheckCallback = (error: Error | null | undefined, info?: ServerInfo) => void;

interface ReadyChecked {
  _readyCheck?: (callback: ReadyCheckCallback) => void;
}

/**
 * An ioredis Cluster's subscriber (Cluster#subscriber, a ClusterSubscriber): the one node connection its
 * SUBSCRIBEs go to, which it replaces by a new one (on another node, or the same) when that connection ends
 * or its node leaves the pool, subscribing the channels again there. Nothing public tells of the move: calls
 * `moved` after each selectSubscriber, when the Cluster has that method (ioredis 5 and 6); otherwise nothing.
 */
export function onClusterSubscriberMoved(cluster: IoredisConnection, moved: () => void): void {
  const subscriber = (cluster as { subscriber?: { selectSubscriber?: () => void } }).subscriber;
  const select = subscriber?.selectSubscriber;
  if (!subscriber || typeof select !== 'function') return;
  subscriber.selectSubscriber = () => {
    select.call(subscriber);
    moved();
  };
}

/** The ioredis internals of one connection, each used only when found (see InternalsFound). */
export class IoredisInternals {
  /**
   * What `connection` offers, checked once when its adapter is made (the Command protocol once per process).
   * The public-API fallback's spec replaces this to run that path against a real server.
   */
  static detect(connection: IoredisConnection): InternalsFound {
    return {
      ownCommands: commandClassOf(connection) !== undefined,
      readyCheck: typeof (connection as ReadyChecked)._readyCheck === 'function',
      commandQueue: typeof (connection as { commandQueue?: { length?: unknown } }).commandQueue?.length === 'number',
      // A Cluster has no socket of its own (each node has one).
      stream: connection.isCluster !== true,
    };
  }

  readonly found: InternalsFound;
  /** The Command class script commands are built on (see scriptCommandClass), when `ownCommands`. */
  readonly commandClass: CommandClass | undefined;
  /** The socket last seen on the connection, and whether it can be corked (checked once per socket). */
  private lastStream: unknown;
  private lastCorkable: Corkable | undefined;

  constructor(private readonly connection: IoredisConnection) {
    this.found = IoredisInternals.detect(connection);
    this.commandClass = this.found.ownCommands ? commandClassOf(connection) : undefined;
  }

  /** Whether commands this library builds (ScriptCommand) can be sent on this connection. */
  get ownCommands(): boolean {
    return this.found.ownCommands;
  }

  /**
   * Has `read` see the INFO of ioredis' ready check on every connection and reconnection, before any command
   * of ours is written, by wrapping the connection's own _readyCheck (ioredis checks again while the server
   * loads its data, through this wrapper with the callback it was given). False when there is no ready check.
   */
  readServerInfo(read: ReadyCheckCallback): boolean {
    if (!this.found.readyCheck) return false;
    const connection = this.connection as IoredisConnection & ReadyChecked;
    const readyCheck = connection._readyCheck as (callback: ReadyCheckCallback) => void;
    const ours = new WeakSet<ReadyCheckCallback>();
    connection._readyCheck = (callback) => {
      if (ours.has(callback)) return readyCheck.call(connection, callback);
      const reading: ReadyCheckCallback = (error, info) => {
        try {
          read(error, info);
        } finally {
          callback(error, info);
        }
      };
      ours.add(reading);
      return readyCheck.call(connection, reading);
    };
    return true;
  }

  /**
   * No command on the connection was sent and is unanswered, or waits to be sent again after a reconnect
   * (ioredis' queue of sent commands); a connection without one is presumed busy.
   */
  nothingInFlight(): boolean {
    return (
      this.found.commandQueue &&
      (this.connection as unknown as { commandQueue: { readonly length: number } }).commandQueue.length === 0
    );
  }

  /** The connection's socket when it can be corked (absent before connecting, and on a Cluster). */
  socket(): Corkable | undefined {
    if (!this.found.stream) return undefined;
    const stream = (this.connection as { stream?: unknown }).stream;
    if (stream !== this.lastStream) {
      this.lastStream = stream;
      const candidate = stream as Partial<Corkable> | undefined;
      this.lastCorkable =
        typeof candidate?.cork === 'function' && typeof candidate.uncork === 'function'
          ? (candidate as Corkable)
          : undefined;
    }
    return this.lastCorkable;
  }

  /**
   * Queues a command this library builds (`command()`) on a pipeline (Pipeline#sendCommand, in ioredis 5 and 6 alike,
   * but not in their typings of a pipeline), to be written to the socket the pipeline goes out on. False, queueing
   * nothing, when the connection takes no such commands or the pipeline has no sendCommand.
   */
  queueOnPipeline(pipeline: IoredisPipeline, command: () => Command): boolean {
    if (!this.found.ownCommands || !pipelineSendsCommands(pipeline)) return false;
    (pipeline as unknown as { sendCommand(queued: Command): unknown }).sendCommand(command());
    return true;
  }
}

/** Per connection prototype (a copy of ioredis' or iovalkey's Redis, or a subclass): its Command class, or null. */
const commandClasses = new WeakMap<object, CommandClass | null>();

/**
 * The Command class of the copy of ioredis (or iovalkey) that made a standalone `connection`: asked once per
 * connection class, by having it build a PING through its public `call` and catching the command at
 * `sendCommand` (the public way to send a built command) on a throwaway object that inherits from the
 * connection, so nothing is sent and the connection is left as it was. (The class itself does not say it:
 * ioredis mixes EventEmitter into its Redis prototype, `constructor` included.) Kept when ioredis writes such
 * commands by asking them for their bytes for the socket (Command#toWritable(socket)). A Cluster routes a
 * command by its keys: none (it goes by the public API).
 */
function commandClassOf(connection: IoredisConnection): CommandClass | undefined {
  if (connection.isCluster === true || typeof connection.sendCommand !== 'function') return undefined;
  const type = Object.getPrototypeOf(connection) as object | null;
  if (type === null) return undefined;
  let found = commandClasses.get(type);
  if (found === undefined) {
    found = builtCommandClass(connection) ?? null;
    commandClasses.set(type, found);
  }
  return found ?? undefined;
}

function builtCommandClass(connection: IoredisConnection): CommandClass | undefined {
  const call = (connection as { call?: unknown }).call;
  if (typeof call !== 'function') return undefined;
  let built: unknown;
  const probe = Object.create(connection, {
    options: { value: { enableAutoPipelining: false } },
    sendCommand: {
      value: (command: unknown) => {
        built = command;
        return Promise.resolve(null);
      },
    },
  }) as object;
  try {
    const reply: unknown = call.call(probe, 'ping');
    if (reply instanceof Promise) reply.catch(noop);
  } catch {
    return undefined;
  }
  const base = typeof built === 'object' && built !== null ? (built.constructor as unknown) : undefined;
  const writes = typeof base === 'function' && (base.prototype as { toWritable?: unknown }).toWritable;
  return typeof writes === 'function' && writes.length >= 1 ? (base as CommandClass) : undefined;
}

/** Per pipeline class: whether it has sendCommand. */
const pipelineClasses = new WeakMap<object, boolean>();

function pipelineSendsCommands(pipeline: IoredisPipeline): boolean {
  const type = Object.getPrototypeOf(pipeline) as object;
  let sends = pipelineClasses.get(type);
  if (sends === undefined) {
    sends = typeof (pipeline as { sendCommand?: unknown }).sendCommand === 'function';
    pipelineClasses.set(type, sends);
  }
  return sends;
}
