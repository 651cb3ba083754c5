import net from 'node:net';

/**
 * A TCP port on 127.0.0.1 that nothing listened on a moment ago: the OS picks it for a server bound on
 * port 0, which is closed again. Another process may still take it before the caller binds, so callers
 * retry on a collision.
 */
export function findFreePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.unref();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

/** Whether `port` on 127.0.0.1 can be bound right now. */
export function isPortFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = net.createServer();
    server.unref();
    server.on('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}

/**
 * A free port whose Redis Cluster bus port (port + 10000) is free too: Redis derives the bus port that way
 * unless `cluster-port` is set, and older servers cannot set it.
 */
export async function findFreeClusterPort(): Promise<number> {
  for (let attempt = 0; attempt < 100; attempt++) {
    const port = await findFreePort();
    if (port + 10000 <= 65535 && (await isPortFree(port + 10000))) return port;
  }
  throw new Error('no free port with a free cluster bus port (port + 10000) found in 100 attempts');
}
