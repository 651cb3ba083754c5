import { LockOptionsError } from '../../errors';
import type { RedlockNode } from '../../lock-options.interface';

/** What the check needs of a Redlock node: its place in `nodes`, and the identity of the server behind it. */
export interface IdentifiableNode {
  readonly label: string;
  /** The run_id of the Redis server this node reaches (INFO server): one per server process. */
  serverId(timeoutMs: number): Promise<string>;
}

/** How soon nodes that could not be identified (down, or INFO refused by an ACL) are asked again, in ms. */
const RETRY_MS = 5_000;

/**
 * Redlock counts each node's vote, so its nodes must be independent servers. The options check at bootstrap
 * finds the same URL, host and port, or client given twice, but not two names for one server (`localhost`
 * and `127.0.0.1`, a DNS alias) nor two clients of one server: with those, one server's grant counts twice and
 * a lock can be granted to two callers at once. So each node is asked once which server it reaches (its
 * run_id), in the background from the first acquisition on (no round trip added to it); once two nodes name
 * the same server, every acquisition is refused with a LockOptionsError naming both.
 */
export class DistinctServers {
  private readonly ids: (string | undefined)[];
  private unidentified: number;
  private checking = false;
  private nextCheckAt = 0;
  /** The misconfiguration found, refused from then on; undefined while none is known. */
  failure: LockOptionsError | undefined;

  constructor(
    private readonly nodes: readonly IdentifiableNode[],
    private readonly connections: readonly RedlockNode[],
  ) {
    this.ids = nodes.map(() => undefined);
    // One node has nothing to be confused with.
    this.unidentified = nodes.length > 1 ? nodes.length : 0;
  }

  /** Every node identified, each a server of its own (or one node: nothing to check): the hot path's one test. */
  get verified(): boolean {
    return this.unidentified === 0 && this.failure === undefined;
  }

  /** Asks the nodes not identified yet, unless a check is under way or the last one was too recent. */
  check(timeoutMs: number): void {
    if (this.unidentified === 0 || this.checking || performance.now() < this.nextCheckAt) return;
    this.checking = true;
    const asked = this.nodes.map((node, index) =>
      this.ids[index] !== undefined
        ? undefined
        : node.serverId(timeoutMs).then((id) => {
            if (id === '' || this.ids[index] !== undefined) return;
            this.ids[index] = id;
            this.unidentified--;
          }),
    );
    void Promise.allSettled(asked).then(() => {
      this.checking = false;
      this.nextCheckAt = performance.now() + RETRY_MS;
      this.failure ??= this.sameServer();
    });
  }

  private sameServer(): LockOptionsError | undefined {
    const first = new Map<string, number>();
    for (let index = 0; index < this.ids.length; index++) {
      const id = this.ids[index];
      if (id === undefined) continue;
      const earlier = first.get(id);
      if (earlier !== undefined) {
        return new LockOptionsError(
          this.nodes[index].label,
          this.connections[index],
          `a Redis server that no other node reaches (${this.nodes[earlier].label} reaches the same one, run_id ` +
            `${id.slice(0, 8)}…): Redlock needs independent masters, and this one's grants would count twice`,
        );
      }
      first.set(id, index);
    }
    return undefined;
  }
}
