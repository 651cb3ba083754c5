// A node's subscriber connection: where release announcements arrive, opened on first use.
import type { LockClient } from '../clients';

/**
 * Where a node's announcements go: a release's token, or none for announcements that may have been missed
 * (the subscriber connection was lost meanwhile), which the hub counts as a release it did not hear.
 */
export type ReleaseHandler = (channel: string, token?: string) => void;

/**
 * A channel subscribed to, and left, after a reconnect: a SUBSCRIBE of a channel already listened to may send
 * nothing (node-redis only adds the listener), while this one is always sent, behind the driver's own. Named
 * after one of the channels (under the key prefix), so that a Redis ACL that lets the connection use those
 * (`&<keyPrefix>*`) lets it use this one too.
 */
function probeChannel(channel: string): string {
  return `${channel}:resubscribed`;
}

/**
 * The subscriber connection of a node, duplicated from its lock connection on the first subscription (a
 * connection in subscriber mode serves nothing else), and the handler its messages go to.
 */
export class ReleaseSubscriber {
  private connection: LockClient | undefined;
  private handler: ReleaseHandler | undefined;
  /** The channels subscribed to, subscribed again after a reconnect. */
  private readonly channels = new Set<string>();
  /**
   * A resubscription under way, and whether another reconnect was reported meanwhile: reports while one is under
   * way make one more after it, not one each (a Cluster client reports each node's every reconnection attempt).
   */
  private resubscribing: 'no' | 'yes' | 'again' = 'no';

  constructor(private readonly client: LockClient) {}

  /** Where release announcements go; set once by the store. */
  onRelease(handler: ReleaseHandler): void {
    this.handler = handler;
  }

  /** Resolves once announcements on `channel` are delivered, opening the connection if it is not yet. */
  async subscribe(channel: string): Promise<void> {
    this.channels.add(channel);
    await this.open().subscribe(channel);
  }

  async unsubscribe(channel: string): Promise<void> {
    this.channels.delete(channel);
    await this.connection?.unsubscribe(channel);
  }

  /** Closes the subscriber connection, if one was opened; a later open() would open another. */
  close(): Promise<void> | undefined {
    const connection = this.connection;
    this.connection = undefined;
    this.channels.clear();
    return connection?.close();
  }

  private open(): LockClient {
    if (!this.connection) {
      const connection = this.client.duplicate({ subscriber: true });
      connection.onMessage((channel, token) => this.handler?.(channel, token));
      connection.onReconnect(() => this.resubscribe(connection));
      this.connection = connection;
    }
    return this.connection;
  }

  /**
   * After a reconnect (or a Cluster's move to another node): releases published meanwhile reached nobody here,
   * and took the "awaited" marks that would have announced them again. So once the channels are subscribed
   * again (whatever the driver resubscribes by itself, this waits for SUBSCRIBEs of its own, answered behind
   * the driver's), each gets an announcement without a token: the hub wakes a waiter to look, as for a
   * release it heard. Announced even when a SUBSCRIBE failed: a spare wake-up costs a waiter one attempt, a
   * missed one its sleep until the lease's end.
   */
  private resubscribe(connection: LockClient): void {
    if (this.resubscribing !== 'no') {
      this.resubscribing = 'again';
      return;
    }
    const channels = [...this.channels];
    if (channels.length === 0) return;
    this.resubscribing = 'yes';
    const probe = probeChannel(channels[0]);
    const subscribed = [probe, ...channels].map((channel) => connection.subscribe(channel));
    void Promise.allSettled(subscribed).then(() => {
      const again = this.resubscribing === 'again';
      this.resubscribing = 'no';
      connection.unsubscribe(probe).catch(() => undefined);
      if (this.connection !== connection) return;
      for (const channel of channels) if (this.channels.has(channel)) this.handler?.(channel);
      if (again) this.resubscribe(connection);
    });
  }
}
