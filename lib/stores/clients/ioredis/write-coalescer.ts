// Coalesces the commands of one tick on an ioredis connection into few socket writes, by corking its socket.
import type { IoredisInternals, Corkable } from './ioredis-internals';

/** Most commands one socket write carries when many are sent in one tick. */
export const FLUSH_EVERY = 32;

/**
 * Coalesces the commands of one tick into few socket writes, in place of ioredis auto-pipelining (which
 * builds a Pipeline per batch, delays every command to a later tick, and keeps one batch in flight per
 * connection: slower both at many callers and for serial calls, see docs/performance.md). The socket is
 * corked at the first command of a tick and uncorked once the tick's callbacks and promise jobs have run,
 * and flushed early every FLUSH_EVERY commands so Redis starts on a burst while the rest is built.
 *
 * With `writeFirstWhenIdle` (one standalone or Sentinel-managed deployment, not a Redlock node; a Cluster
 * has no socket to cork either way), a tick's first command on a connection with nothing in flight is
 * written at once, uncorked, and only the tick's later commands are corked: Redis then runs it while this
 * process finishes the tick (the lease, the caller's continuation, the next command's arguments), instead
 * of after. A lone caller's commands are such commands, as a rule (not while a renewal's reply, or a
 * minReplicas WAIT, is still due). Not for Redlock nodes: there the extra writes (and wake-ups of each server)
 * cost more than they save (see docs/performance.md).
 * Safe because the connection is this adapter's alone: nobody else's commands wait in the cork.
 */
export class WriteCoalescer {
  /** The socket corked in this tick, if any: uncorked at the tick's end, even if the connection moved on. */
  private corkedStream: Corkable | undefined;
  /** Commands written into the cork since it was last flushed. */
  private corkedCommands = 0;

  constructor(
    private readonly internals: IoredisInternals,
    private readonly writeFirstWhenIdle: boolean,
  ) {}

  /** Called before each command is handed to ioredis. */
  beforeWrite(): void {
    if (this.corkedStream) {
      if (++this.corkedCommands >= FLUSH_EVERY) this.flush();
      return;
    }
    if (this.writeFirstWhenIdle && this.internals.nothingInFlight()) return;
    const stream = this.internals.socket();
    if (!stream) return;
    stream.cork();
    this.corkedStream = stream;
    this.corkedCommands = 1;
    process.nextTick(this.endTick);
  }

  /** Writes what the cork holds, and corks again for the rest of the tick. */
  flush(): void {
    const corked = this.corkedStream;
    if (!corked) return;
    corked.uncork();
    corked.cork();
    this.corkedCommands = 0;
  }

  /** The tick's end: its corked commands go out in one write. Bound once: no closure per tick. */
  private readonly endTick = (): void => {
    const stream = this.corkedStream;
    this.corkedStream = undefined;
    stream?.uncork();
  };
}
