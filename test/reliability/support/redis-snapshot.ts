import type { RedisProcess } from '../../support/redis-server';

/** Fence counters of any key prefix: the one thing a refused acquisition may leave (they never expire by design). */
const FENCE_COUNTER = /lock:\{.*\}:fence$/;

/**
 * Every key of a (small, test-only) Redis with its type and content, to show that an operation left
 * nothing behind: no new key, no key removed, no value changed.
 */
export class RedisSnapshot {
  constructor(private readonly server: RedisProcess) {}

  async take(): Promise<Map<string, string>> {
    const keys = (await this.server.command('KEYS', '*')) as string[];
    const entries = await Promise.all(keys.map(async (key) => [key, await this.describe(key)] as const));
    return new Map(entries);
  }

  /**
   * What changed since `before`, one line per key (`+ new`, `- removed`, `~ changed`). New keys matching
   * `allowedNew` (default: fence counters) are not reported.
   */
  async changesSince(before: ReadonlyMap<string, string>, allowedNew: RegExp = FENCE_COUNTER): Promise<string[]> {
    const after = await this.take();
    const changes: string[] = [];
    for (const [key, value] of after) {
      const old = before.get(key);
      if (old === undefined && !allowedNew.test(key)) changes.push(`+ ${key} ${value}`);
      else if (old !== undefined && old !== value && !FENCE_COUNTER.test(key))
        changes.push(`~ ${key} ${old} → ${value}`);
    }
    for (const key of before.keys()) if (!after.has(key)) changes.push(`- ${key}`);
    return changes.sort();
  }

  private async describe(key: string): Promise<string> {
    const type = String(await this.server.command('TYPE', key));
    const expiring = Number(await this.server.command('PTTL', key)) >= 0 ? ' (expiring)' : '';
    const read: Record<string, string[]> = {
      string: ['GET', key],
      list: ['LRANGE', key, '0', '-1'],
      hash: ['HGETALL', key],
      set: ['SMEMBERS', key],
      zset: ['ZRANGE', key, '0', '-1', 'WITHSCORES'],
    };
    let content = read[type] ? await this.server.command(...read[type]) : '?';
    if (type === 'set' && Array.isArray(content)) content = [...content].sort();
    return `${type}${expiring} ${JSON.stringify(content)}`;
  }
}
