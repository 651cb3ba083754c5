// A node's subscriber connection: where release announcements arrive, opened on first use.
import type { LockClient } from '../clients';

/**
 * Where a node's announcements go: a release's token, or none for announcements that may have been missed
 * (the subscriber connection was lost meanwhile), which the hub counts as a release it did not hear.
 */
export type ReleaseHandler = (channel: string, token?: string) => void;

/**
 * The subscriber connection of a node, duplicated from its lock connection on the first subscription (a
 * connection in subscriber mode serves nothing else), and the handler its messages go to.
 */
export class ReleaseSubscriber {
  private connection: LockClient | undefined;
  private handler: ReleaseHandler | undefined;
  /** The channels subscribed to, subscribed again after a reconnect. */
  private readonly channels = new Set<string>();

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
   * After a reconnect: releases published while the connection was down reached nobody here, and took the
   * "awaited" marks that would have announced them again. So once each channel is subscribed again (whatever
   * the driver resubscribes by itself, this waits for a subscription known to be active), it gets an
   * announcement without a token: the hub wakes a waiter to look, as for a release it heard. A channel whose
   * subscription fails waits for the next reconnect.
   */
  private resubscribe(connection: LockClient): void {
    for (const channel of this.channels) {
      connection.subscribe(channel).then(
        () => {
          if (this.connection === connection && this.channels.has(channel)) this.handler?.(channel);
        },
        () => undefined,
      );
    }
  }
}
