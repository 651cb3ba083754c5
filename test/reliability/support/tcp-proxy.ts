import net from 'node:net';

/**
 * A TCP proxy on 127.0.0.1 in front of one Redis, to break the connection in ways a server signal cannot:
 * a command that reached Redis and ran, whose reply never comes back because the connection is reset.
 */
export class TcpProxy {
  /** While true, replies from Redis are dropped (requests still go through). */
  swallowReplies = false;
  /** While true, requests to Redis are dropped: a path that has broken, whose client has not noticed yet. */
  dropRequests = false;
  /** Requests whose text matches are dropped: one command left unanswered while the others go through. */
  dropRequestsMatching: RegExp | undefined;
  /** How many requests were dropped by dropRequestsMatching. */
  droppedMatching = 0;
  private readonly server: net.Server;
  private readonly pairs = new Set<{ client: net.Socket; upstream: net.Socket }>();

  private constructor(private readonly targetPort: number) {
    this.server = net.createServer((client) => this.accept(client));
  }

  static async start(targetPort: number): Promise<TcpProxy> {
    const proxy = new TcpProxy(targetPort);
    await new Promise<void>((resolve, reject) => {
      proxy.server.once('error', reject);
      proxy.server.listen(0, '127.0.0.1', () => resolve());
    });
    return proxy;
  }

  get url(): string {
    return `redis://127.0.0.1:${(this.server.address() as net.AddressInfo).port}`;
  }

  /** Resets every proxied connection (both sides), as a network blip or a middlebox would. */
  resetAll(): void {
    for (const { client, upstream } of this.pairs) {
      client.resetAndDestroy();
      upstream.destroy();
    }
    this.pairs.clear();
  }

  async stop(): Promise<void> {
    this.resetAll();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private accept(client: net.Socket): void {
    const upstream = net.connect({ host: '127.0.0.1', port: this.targetPort });
    const pair = { client, upstream };
    this.pairs.add(pair);
    client.on('data', (chunk) => {
      if (this.dropRequests) return;
      if (this.dropRequestsMatching?.test(chunk.toString('latin1'))) {
        this.droppedMatching += 1;
        return;
      }
      upstream.write(chunk);
    });
    upstream.on('data', (chunk) => {
      if (!this.swallowReplies) client.write(chunk);
    });
    const close = (): void => {
      this.pairs.delete(pair);
      client.destroy();
      upstream.destroy();
    };
    client.on('error', close).on('close', close);
    upstream.on('error', close).on('close', close);
  }
}
