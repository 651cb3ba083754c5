// Finds two Redlock nodes that reach one Redis server, which would count one server's vote twice.
import { Logger } from '@nestjs/common';
import { LockOptionsError } from '../../errors';
import type { RedlockNode } from '../../options/lock-options.interface';
import { safeMessage } from '../../errors/safe-cause';

/** What the check needs of a Redlock node: its place in `nodes`, and the identity of the server behind it. */
export interface IdentifiableNode {
  readonly label: string;
  /** The run_id of the Redis server this node reaches (INFO server): one per server process. */
  serverId(timeoutMs: number): Promise<string>;
}

/** How soon nodes that did not answer (down, paused, timed out) are asked again, in ms. */
const RETRY_MS = 5_000;

/**
 * A refusal the server will repeat: INFO denied by an ACL (NOPERM, or a script's "can't run this command"), or
 * unknown to it or to a proxy in front of it. Other errors (LOADING after a restart, BUSY, MASTERDOWN) pass.
 */
const REFUSED_FOR_GOOD = /NOPERM|can't run this command|unknown command|not allowed|unsupported/i;

/**
 * Redlock counts each node's vote, so its nodes must be independent servers. The options check at bootstrap
 * finds the same URL, host and port, or client given twice, but not two names for one server (`localhost`
 * and `127.0.0.1`, a DNS alias) nor two clients of one server: with those, one server's grant counts twice and
 * a lock can be granted to two callers at once. So each node is asked once which server it reaches (its
 * run_id), in the background from the first acquisition on (no round trip added to it). Once two nodes name
 * the same server the store refuses every acquisition and renewal (see RedlockLockStore) and the error is
 * logged once. A node that refuses the question (INFO denied by an ACL, a proxy) is left out of the check,
 * logged once; one that does not answer is asked again at an acquisition at least 5 s later.
 */
export class DistinctServers {
  private readonly logger = new Logger('LockModule');
  /** Per node: its run_id; null once it refused to say (left out); undefined while not known yet. */
  private readonly ids: (string | null | undefined)[];
  private unknown: number;
  private checking = false;
  private nextCheckAt = 0;
  /** The two nodes found to be one server, once found. */
  private match: { readonly earlier: number; readonly later: number; readonly id: string } | undefined;

  constructor(
    private readonly nodes: readonly IdentifiableNode[],
    private readonly connections: readonly RedlockNode[],
  ) {
    this.ids = nodes.map(() => undefined);
    // One node has nothing to be confused with.
    this.unknown = nodes.length > 1 ? nodes.length : 0;
  }

  /** Every node asked and none shared: the hot path's one test. */
  get verified(): boolean {
    return this.unknown === 0 && this.match === undefined;
  }

  /** A new error per call (its stack is the caller's), naming both nodes; undefined while none is known. */
  failure(): LockOptionsError | undefined {
    const match = this.match;
    if (!match) return undefined;
    return new LockOptionsError(
      this.nodes[match.later].label,
      this.connections[match.later],
      `a Redis server that no other node reaches (${this.nodes[match.earlier].label} reaches the same one, run_id ` +
        `${match.id.slice(0, 8)}…): Redlock needs independent masters, and this one's grants would count twice`,
    );
  }

  /** Asks the nodes not known yet, unless a check is under way or the last one was too recent. */
  check(timeoutMs: number): void {
    if (this.unknown === 0 || this.checking || performance.now() < this.nextCheckAt) return;
    this.checking = true;
    const asked = this.nodes.map((node, index) =>
      this.ids[index] === undefined ? this.ask(node, index, timeoutMs) : undefined,
    );
    void Promise.all(asked).then(() => {
      this.checking = false;
      this.nextCheckAt = performance.now() + RETRY_MS;
      if (this.match) return;
      this.match = this.sameServer();
      const failure = this.failure();
      if (failure)
        this.logger.error(`${failure.message} Every acquisition and renewal is refused until the nodes are fixed.`);
    });
  }

  private async ask(node: IdentifiableNode, index: number, timeoutMs: number): Promise<void> {
    let id: string | null;
    try {
      id = await node.serverId(timeoutMs);
    } catch (error) {
      const message = safeMessage(error);
      // Down, slow or briefly refusing: asked again later. A refusal for good would only repeat.
      if (!REFUSED_FOR_GOOD.test(message)) return;
      this.logger.warn(
        `Cannot tell which Redis server ${node.label} is (${message}): ` +
          `it is left out of the check for two names of one server`,
      );
      id = null;
    }
    // Checks run one at a time (checking), so nothing else has set this node meanwhile.
    this.ids[index] = id === '' ? null : id;
    this.unknown--;
  }

  private sameServer(): DistinctServers['match'] {
    const first = new Map<string, number>();
    for (let index = 0; index < this.ids.length; index++) {
      const id = this.ids[index];
      if (id === undefined || id === null) continue;
      const earlier = first.get(id);
      if (earlier !== undefined) return { earlier, later: index, id };
      first.set(id, index);
    }
    return undefined;
  }
}
