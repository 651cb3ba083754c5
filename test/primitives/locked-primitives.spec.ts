import { ConsoleLogger, Injectable } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { setTimeout as sleep } from 'node:timers/promises';
import { LockModule, LockService } from '../../lib';
import { Locked } from '../../lib/decorators';
import { startRedis, type RedisProcess } from '../support/redis-server';

@Injectable()
class OutboundService {
  inside = 0;
  mostInside = 0;
  readers = 0;
  mostReaders = 0;
  violations = 0;
  writes = 0;

  constructor(readonly locks: LockService) {}

  /** At most 2 calls at once to the rate-limited API, across every instance. */
  @Locked('stripe', { limit: 2, wait: 20_000 })
  async charge(): Promise<number> {
    this.mostInside = Math.max(this.mostInside, ++this.inside);
    await sleep(20);
    this.inside--;
    return this.locks.current()?.fence ?? -1;
  }

  @Locked('report', { mode: 'read', wait: 20_000 })
  async read(): Promise<void> {
    this.mostReaders = Math.max(this.mostReaders, ++this.readers);
    if (this.writes > 0) this.violations++;
    await sleep(20);
    this.readers--;
  }

  @Locked('report', { mode: 'write', wait: 20_000 })
  async rebuild(): Promise<void> {
    this.writes++;
    if (this.readers > 0 || this.writes > 1) this.violations++;
    await sleep(10);
    this.writes--;
  }

  /** Over its limit at once: the surplus calls are skipped, not run. */
  @Locked('export', { limit: 1, wait: 0, onBusy: 'skip' })
  async heavyExport(): Promise<string> {
    await sleep(100);
    return 'done';
  }
}

describe('@Locked with limit and mode (one Redis)', () => {
  let redis: RedisProcess;
  beforeAll(async () => {
    redis = await startRedis();
  });
  afterAll(() => redis?.stop());

  it("@Locked('stripe', { limit: 2 }), mode 'read'/'write' and onBusy 'skip' work on provider methods", async () => {
    const module = await Test.createTestingModule({
      imports: [LockModule.forRoot({ redis: redis.url })],
      providers: [OutboundService],
    })
      .setLogger(new ConsoleLogger({ logLevels: ['error', 'fatal'] }))
      .compile();
    await module.init();
    try {
      const service = module.get(OutboundService);
      const fences = await Promise.all(Array.from({ length: 8 }, () => service.charge()));
      expect(service.mostInside).toBe(2);
      expect(new Set(fences).size).toBe(8);

      await Promise.all([
        ...Array.from({ length: 6 }, () => service.read()),
        service.rebuild(),
        ...Array.from({ length: 6 }, () => service.read()),
        service.rebuild(),
      ]);
      expect(service.violations).toBe(0);
      expect(service.mostReaders).toBeGreaterThan(1);

      const results = await Promise.all([service.heavyExport(), service.heavyExport(), service.heavyExport()]);
      expect(results.filter((result) => result === 'done')).toHaveLength(1);
      expect(results.filter((result) => result === undefined)).toHaveLength(2);
    } finally {
      await module.close();
    }
  });
});
