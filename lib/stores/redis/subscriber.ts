// A node's subscriber connection: where release announcements arrive, opened on first use.
import type { LockClient } from '../clients';

/**
 * The subscriber connection of a node, duplicated from its lock connection on the first subscription (a
 * connection in subscriber mode serves nothing else), and the handler its messages go to.
 */
export class ReleaseSubscriber {
  private connection: LockClient | undefined;
  private handler: ((channel: string, token: string) => void) | undefined;

  constructor(private readonly client: LockClient) {}

  /** Where release announcements go; set once by the store. */
  onRelease(handler: (channel: string, token: string) => void): void {
    this.handler = handler;
  }

  /** The subscriber connection, opened now if it is not yet. */
  open(): LockClient {
    if (!this.connection) {
      const connection = this.client.duplicate({ subscriber: true });
      connection.onMessage((channel, token) => this.handler?.(channel, token));
      this.connection = connection;
    }
    return this.connection;
  }

  async unsubscribe(channel: string): Promise<void> {
    await this.connection?.unsubscribe(channel);
  }

  /** Closes the subscriber connection, if one was opened; a later open() would open another. */
  close(): Promise<void> | undefined {
    const connection = this.connection;
    this.connection = undefined;
    return connection?.close();
  }
}
