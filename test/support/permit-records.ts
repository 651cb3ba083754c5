import { eventually } from './eventually';
import type { RedisProcess } from './redis-server';

/**
 * For the Redlock inspect tests: waits until every node records the permit (or reader) `member` of `key`, then
 * returns a node whose record is not `fence` (the grant's, which the write-back records on the nodes of its
 * quorum): a node that granted after the quorum was in, and so records what its own counter gave. Node 0 when
 * every node answered in time and records `fence`.
 */
export async function nodeOutsideQuorum(servers: readonly RedisProcess[], key: string, member: string, fence: number): Promise<number> {
  const records = (): Promise<unknown[]> => Promise.all(servers.map((server) => server.command('HGET', `lock:{${key}}:permits`, member)));
  await eventually(async () => (await records()).every((record) => record !== null), 2_000, 'every node records the permit');
  const late = (await records()).findIndex((record) => record !== String(fence));
  return late >= 0 ? late : 0;
}
