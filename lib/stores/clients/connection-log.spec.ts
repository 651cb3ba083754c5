import type { Logger } from '@nestjs/common';
import { ConnectionLog } from './connection-log';

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

  it('logs an error once per outage, a different one again, and the end of the outage with the repeats of the last', () => {
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
      "log Redis connection 'redis' is ready (after the errors logged above; the last error came 1 more time(s) while reconnecting)",
      "warn Redis connection 'redis': connect ECONNREFUSED 127.0.0.1:6399",
      "log Redis connection 'redis' is ready (after the errors logged above)",
    ]);
  });

  it("compares errors without their numbers (a Sentinel retry delay), and logs one that keeps coming a minute later (no 'ready' in between)", () => {
    vi.useFakeTimers({ toFake: ['performance'] });
    const { logger, lines } = recordingLogger();
    const log = new ConnectionLog(logger, 'redis');
    log.error('All sentinels are unreachable. Retrying from scratch after 10ms.');
    log.error('All sentinels are unreachable. Retrying from scratch after 20ms.');
    vi.advanceTimersByTime(60_000);
    log.error('All sentinels are unreachable. Retrying from scratch after 30ms.');
    expect(lines).toEqual([
      "warn Redis connection 'redis': All sentinels are unreachable. Retrying from scratch after 10ms.",
      "warn Redis connection 'redis': All sentinels are unreachable. Retrying from scratch after 30ms. (came 1 more time(s) since it was last logged)",
    ]);
  });
});
