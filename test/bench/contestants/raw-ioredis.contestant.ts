import { randomUUID } from 'node:crypto';
import Redis from 'ioredis';
import { LEASE_MS, type Contestant, type ContestantEntry } from './contestant';
import { closeClients } from './close-clients';

/** Compare-and-delete: the only safe release of a SET NX lease. */
const RELEASE_LUA = `if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0`;

interface ReleaseCommand {
  benchRelease(key: string, token: string): Promise<number>;
}

/**
 * The floor any Redis lock pays: `SET key token NX PX ttl` to acquire, one EVALSHA compare-and-delete to
 * release (two round trips), over plain clients. On five servers it is Redlock without the bookkeeping:
 * both steps go to every server at once and a majority grants. It never waits: a busy key is an error,
 * so it only runs the uncontended workloads.
 */
export async function createRawContestant(urls: readonly string[]): Promise<Contestant> {
  const clients = urls.map((url) => new Redis(url));
  await Promise.all(clients.map((client) => client.ping()));
  for (const client of clients) client.defineCommand('benchRelease', { numberOfKeys: 1, lua: RELEASE_LUA });
  const scripted = clients as unknown as ReleaseCommand[];
  const quorum = Math.floor(clients.length / 2) + 1;
  const release = (key: string, token: string): Promise<number[]> =>
    Promise.all(scripted.map((client) => client.benchRelease(key, token)));
  return {
    lock: async (key) => {
      const token = randomUUID();
      const replies = await Promise.all(clients.map((client) => client.set(key, token, 'PX', LEASE_MS, 'NX')));
      if (replies.filter((reply) => reply === 'OK').length < quorum) {
        await release(key, token);
        throw new Error(`raw baseline: ${key} is busy (it does not wait)`);
      }
      return { release: () => release(key, token) };
    },
    close: () => closeClients(clients),
  };
}

export const rawEntry: ContestantEntry = {
  id: 'raw',
  label: 'raw ioredis (floor)',
  role: 'baseline',
  waits: false,
  semaphoreUnsupported: 'cannot wait (a floor, not a lock library)',
  create: createRawContestant,
};
