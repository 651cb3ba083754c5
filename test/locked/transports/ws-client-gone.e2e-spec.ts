import { MessageBody, SubscribeMessage, WebSocketGateway } from '@nestjs/websockets';
import { LockService } from '../../../lib';
import { LockKeyNamer } from '../../../lib/keys';
import { Locked } from '../../../lib/decorators';
import { startRedis, type RedisProcess } from '../../support/redis-server';
import { waiterAsleep } from '../../support/waiters';
import { Gates, eventually } from '../helpers/gates';
import { connectSocket, RecordingLogger, startHttpApp, type HttpTransportApp } from '../helpers/transport-apps';

const gates = new Gates();
const ACK_TIMEOUT_MS = 10_000;
/** Every message that got into the handler, by report id, in order. */
const ran: string[] = [];

@WebSocketGateway()
class ReportsGateway {
  @SubscribeMessage('rebuild')
  @Locked('ws-report:{data.id}', { wait: 10_000 })
  async rebuild(@MessageBody() data: { id: string }) {
    ran.push(data.id);
    await gates.get(`report ${data.id}`).pass();
    return { rebuilt: data.id };
  }
}

/**
 * A @Locked gateway message waiting for a busy key whose socket.io client disconnects stops waiting, as an HTTP
 * request does (http-client-gone.e2e-spec.ts), instead of taking the lock once free and running the handler for
 * nobody, holding off the clients still there. No watcher of ours does it: Nest's socket.io adapter (and its `ws`
 * adapter alike) unsubscribes a client's calls when it disconnects, and LockInterceptor's teardown cancels the
 * wait. Real Nest app, real socket.io clients, real Redis.
 */
describe('a waiting @Locked gateway message whose socket.io client disconnects', () => {
  let redis: RedisProcess;
  let app: HttpTransportApp;
  const logger = new RecordingLogger();

  beforeAll(async () => {
    redis = await startRedis();
    app = await startHttpApp('express', redis.url, { providers: [ReportsGateway] }, logger, { ttl: 10_000 });
  });
  afterAll(async () => {
    gates.openAll();
    await app?.close();
    await redis?.stop();
  });

  it('stops waiting at once, without an error: the handler never runs for it, and the next client gets the key after the holder', async () => {
    const id = 'gone-1';
    const locks = app.app.get(LockService);
    const [holderSocket, leaverSocket, nextSocket] = [
      await connectSocket(app.baseUrl),
      await connectSocket(app.baseUrl),
      await connectSocket(app.baseUrl),
    ];
    try {
      const held = holderSocket.timeout(ACK_TIMEOUT_MS).emitWithAck('rebuild', { id });
      await gates.get(`report ${id}`).reached();

      // No acknowledgement will come: the client leaves before the lock is free.
      leaverSocket.emit('rebuild', { id });
      await waiterAsleep(locks, `ws-report:${id}`);
      const mark = logger.entries.length;
      leaverSocket.disconnect();
      // The waiter leaves the key's queue without the holder releasing anything.
      const names = [new LockKeyNamer('lock:').names(`ws-report:${id}`)];
      await eventually(
        async () => !locks.store.hasWaiters(names),
        5_000,
        "the disconnected client's message stopped waiting",
      );

      gates.get(`report ${id}`).open();
      expect(await held).toEqual({ rebuilt: id });
      expect(await nextSocket.timeout(ACK_TIMEOUT_MS).emitWithAck('rebuild', { id })).toEqual({ rebuilt: id });
      // The holder and the next client; the one that left never got in (it would have, before the next).
      expect(ran.filter((entry) => entry === id)).toHaveLength(2);
      // Ended without an error for Nest's WebSocket filter to log as an internal one.
      expect(logger.since(mark, 'error')).toEqual([]);
      expect(logger.since(mark, 'warn')).toEqual([]);
    } finally {
      for (const socket of [holderSocket, leaverSocket, nextSocket]) socket.disconnect();
    }
  });
});
