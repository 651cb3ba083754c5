import { eventually } from './eventually';
import type { RedisProcess } from './redis-server';

/** The member of `token` in the holders' set of `key` on one node, and the fence that node records for it. */
async function permitRecordOn(
  server: RedisProcess,
  key: string,
  token: string,
): Promise<{ member: string; fence: number } | undefined> {
  const members = (await server.command('ZRANGE', `lock:{${key}}`, '0', '-1')) as string[];
  const member = members.find((value) => value.startsWith(`${token}|`));
  if (member === undefined) return undefined;
  return { member, fence: Number(await server.command('HGET', `lock:{${key}}:permits`, member)) };
}

/**
 * Waits until every Redlock node holds the permit or reader of `token` and at least `quorum` of them record
 * `fence` as its own (the grant's fence: one node gave it, the store records it on as many others as a quorum
 * needs, after the grant). Returns what each node records.
 */
export async function quorumRecords(
  servers: readonly RedisProcess[],
  key: string,
  token: string,
  fence: number,
  quorum: number,
): Promise<{ member: string; fence: number }[]> {
  let records: ({ member: string; fence: number } | undefined)[] = [];
  await eventually(
    async () => {
      records = await Promise.all(servers.map((server) => permitRecordOn(server, key, token)));
      return (
        records.every((record) => record !== undefined) &&
        records.filter((record) => record?.fence === fence).length >= quorum
      );
    },
    5_000,
    `every node holds ${token} and ${quorum} of them record fence ${fence}`,
  );
  return records.map((record) => {
    if (!record) throw new Error('unreachable: every node holds the permit');
    return record;
  });
}
