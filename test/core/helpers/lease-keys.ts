import type { RedisProcess } from '../../support/redis-server';

/**
 * The Redis keys holding a lease of lock `name`: keys that contain the name and carry a TTL (the fencing
 * counter has none), but for the "awaited" mark a refused attempt leaves (not a lease). Found by SCAN, so the
 * test depends on the library's key layout that far only.
 */
export async function findLeaseKeys(server: RedisProcess, name: string): Promise<string[]> {
  const found: string[] = [];
  let cursor = '0';
  do {
    const reply = (await server.command('SCAN', cursor, 'MATCH', `*${name}*`, 'COUNT', '1000')) as [string, string[]];
    cursor = reply[0];
    for (const key of reply[1]) {
      if (!key.endsWith(':awaited') && Number(await server.command('PTTL', key)) > 0) found.push(key);
    }
  } while (cursor !== '0');
  return found;
}

/** Deletes the lease keys of `name` on every server; resolves with how many keys were deleted. */
export async function deleteLeaseKeys(servers: readonly RedisProcess[], name: string): Promise<number> {
  let deleted = 0;
  for (const server of servers) {
    for (const key of await findLeaseKeys(server, name)) deleted += Number(await server.command('DEL', key));
  }
  return deleted;
}
