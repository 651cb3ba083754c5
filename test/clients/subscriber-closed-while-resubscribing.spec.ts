import { Logger } from '@nestjs/common';
import { type LockClient, createLockClient } from '../../lib/stores/clients';
import { TcpProxy } from '../reliability/support/tcp-proxy';
import { CLIENT_FAMILIES, CLIENT_FAMILY_NAMES, type LentClient } from '../support/client-families';
import { eventually } from '../support/eventually';
import { recordUnhandledRejections } from '../support/real-process';
import { type RedisProcess, startRedis } from '../support/redis-server';

const logger = new Logger('SubscriberCloseTest');

/**
 * A subscriber connection that comes back after a lost connection subscribes its channels again; the module may
 * close it at any moment of that, a shutdown while Redis is unreachable or slow among them. Whatever the driver
 * or the module still had unanswered then is given up quietly: no unhandled rejection reaches the application.
 */
describe.each(CLIENT_FAMILY_NAMES.map((name) => [name]))('a subscriber over a lent %s client', (name) => {
  let server: RedisProcess;
  let proxy: TcpProxy;
  let lent: LentClient;
  let subscriber: LockClient | undefined;

  beforeAll(async () => {
    server = await startRedis();
  });
  beforeEach(async () => {
    proxy = await TcpProxy.start(server.port);
    lent = await CLIENT_FAMILIES[name].client(proxy.url);
  });
  afterEach(async () => {
    await subscriber?.close();
    await lent?.close();
    await proxy?.stop();
  });
  afterAll(async () => {
    await server?.stop();
  });

  it('closed just as it reconnects, with its resubscription unanswered: no unhandled rejection', async () => {
    const client = createLockClient(lent.client, { label: `test ${name}`, logger, writeFirstWhenIdle: true });
    subscriber = client.duplicate({ subscriber: true });
    await subscriber.subscribe('resubscribing-channel');
    const unhandled = recordUnhandledRejections();
    try {
      // Closed at the first sign of the new connection: its 'ready' (ioredis reports it before the driver's own
      // SUBSCRIBE is answered; node-redis after it), or a SUBSCRIBE on it.
      let closed: Promise<void> | undefined;
      const close = (): Promise<void> | undefined => (closed ??= subscriber?.close());
      subscriber.onReconnect(() => void close());
      // The reconnected connection's SUBSCRIBEs never reach Redis: they are still unanswered when it closes.
      proxy.dropRequestsMatching = /subscribe/i;
      proxy.resetAll();
      await eventually(
        async () => closed !== undefined || proxy.droppedMatching > 0,
        5_000,
        'the subscriber connected again',
      );
      await close();
      // A rejection nobody handles is reported once the microtasks and the next macrotask have run.
      await new Promise((resolve) => setTimeout(resolve, 50));
      expect(unhandled.reasons).toEqual([]);
    } finally {
      unhandled.stop();
      await client.close();
    }
  });
});
