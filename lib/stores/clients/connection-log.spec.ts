// Spec: a connection's log says each kind of error of an outage once, and when it ended.
import type { Logger } from '@nestjs/common';
import { ClusterNodeLogs, ConnectionLog } from './connection-log';

function recordingLogger(): { logger: Logger; lines: string[] } {
  const lines: string[] = [];
  const logger = {
    warn: (message: string) => lines.push(`warn ${message}`),
    log: (message: string) => lines.push(`log ${message}`),
  } as unknown as Logger;
  return { logger, lines };
}

describe('ConnectionLog', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it('logs each kind of error once per outage, and the end of the outage with how often they came again', () => {
    const { logger, lines } = recordingLogger();
    const log = new ConnectionLog(logger, 'redis');
    log.ready();
    for (let i = 0; i < 3; i++) log.error('connect ECONNREFUSED 127.0.0.1:6399');
    log.error('Connection is closed.');
    log.error('Connection is closed.');
    log.ready();
    // A new outage with the first error: logged again.
    log.error('connect ECONNREFUSED 127.0.0.1:6399');
    log.ready();
    expect(lines).toEqual([
      "warn Redis connection 'redis': connect ECONNREFUSED 127.0.0.1:6399",
      "warn Redis connection 'redis': Connection is closed.",
      "log Redis connection 'redis' is ready (after the errors " +
        'logged above; they came 3 more time(s) while reconnecting)',
      "warn Redis connection 'redis': connect ECONNREFUSED 127.0.0.1:6399",
      "log Redis connection 'redis' is ready (after the errors logged above)",
    ]);
  });

  it('two kinds of error alternating (an ioredis Cluster node at each attempt) are each logged once', () => {
    const { logger, lines } = recordingLogger();
    const log = new ConnectionLog(logger, 'redis, node 127.0.0.1:7001');
    for (let i = 0; i < 10; i++) {
      log.error('connect ECONNREFUSED 127.0.0.1:7001');
      log.error('Connection is closed.');
    }
    log.ready();
    expect(lines).toEqual([
      "warn Redis connection 'redis, node 127.0.0.1:7001': connect ECONNREFUSED 127.0.0.1:7001",
      "warn Redis connection 'redis, node 127.0.0.1:7001': Connection is closed.",
      "log Redis connection 'redis, node 127.0.0.1:7001' is ready (after " +
        'the errors logged above; they came 18 more time(s) while reconnecting)',
    ]);
  });

  it('remembers 16 kinds of error per outage: a 17th forgets the first, which is then logged again', () => {
    const { logger, lines } = recordingLogger();
    const log = new ConnectionLog(logger, 'redis');
    const kinds = Array.from({ length: 17 }, (_, i) => `error ${String.fromCharCode(97 + i)}`);
    for (const kind of kinds) log.error(kind);
    log.error(kinds[1]);
    log.error(kinds[0]);
    expect(lines).toHaveLength(18);
    expect(lines[17]).toBe("warn Redis connection 'redis': error a");
  });

  it(
    'compares errors without their numbers (a Sentinel retry delay), ' +
      "and logs one that keeps coming a minute later (no 'ready' in between)",
    () => {
      vi.useFakeTimers({ toFake: ['performance'] });
      const { logger, lines } = recordingLogger();
      const log = new ConnectionLog(logger, 'redis');
      log.error('All sentinels are unreachable. Retrying from scratch after 10ms.');
      log.error('All sentinels are unreachable. Retrying from scratch after 20ms.');
      vi.advanceTimersByTime(60_000);
      log.error('All sentinels are unreachable. Retrying from scratch after 30ms.');
      expect(lines).toEqual([
        "warn Redis connection 'redis': All sentinels are unreachable. Retrying from scratch after 10ms.",
        "warn Redis connection 'redis': All sentinels are unreachable. " +
          'Retrying from scratch after 30ms. (came 1 more time(s) since it was last logged)',
      ]);
    },
  );
});

describe('ClusterNodeLogs', () => {
  it(
    'logs each node as a connection of its own, ' +
      'keeps its log while the client remakes it, and forgets it once ready',
    () => {
      const { logger, lines } = recordingLogger();
      const nodes = new ClusterNodeLogs(logger, 'redis');
      nodes.error('10.0.0.7:6379', 'connect ECONNREFUSED 10.0.0.7:6379');
      nodes.error('10.0.0.8:6379', 'connect ECONNREFUSED 10.0.0.8:6379');
      // The same node again (the client dropped and remade its connection): not logged again.
      nodes.error('10.0.0.7:6379', 'connect ECONNREFUSED 10.0.0.7:6379');
      nodes.ready('10.0.0.7:6379');
      nodes.ready('10.0.0.9:6379');
      nodes.error('10.0.0.7:6379', 'connect ECONNREFUSED 10.0.0.7:6379');
      expect(lines).toEqual([
        "warn Redis connection 'redis, node 10.0.0.7:6379': connect ECONNREFUSED 10.0.0.7:6379",
        "warn Redis connection 'redis, node 10.0.0.8:6379': connect ECONNREFUSED 10.0.0.8:6379",
        "log Redis connection 'redis, node 10.0.0.7:6379' is ready (after " +
          'the errors logged above; they came 1 more time(s) while reconnecting)',
        "warn Redis connection 'redis, node 10.0.0.7:6379': connect ECONNREFUSED 10.0.0.7:6379",
      ]);
    },
  );

  it('remembers 64 nodes: a 65th forgets the first', () => {
    const { logger, lines } = recordingLogger();
    const nodes = new ClusterNodeLogs(logger, 'redis');
    for (let i = 0; i <= 64; i++) nodes.error(`10.0.1.${i}:6379`, 'connect ETIMEDOUT');
    nodes.error('10.0.1.1:6379', 'connect ETIMEDOUT');
    nodes.error('10.0.1.0:6379', 'connect ETIMEDOUT');
    expect(lines).toHaveLength(66);
    expect(lines[65]).toBe("warn Redis connection 'redis, node 10.0.1.0:6379': connect ETIMEDOUT");
  });
});
