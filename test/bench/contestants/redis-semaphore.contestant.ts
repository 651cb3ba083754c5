import Redis from 'ioredis';
import { Mutex, RedlockMutex, RedlockSemaphore, Semaphore } from 'redis-semaphore';
import { LEASE_MS, MAX_WAIT_MS, type Contestant, type ContestantEntry } from './contestant';
import { closeClients } from './close-clients';
import { packageVersion } from './package-version';

/**
 * redis-semaphore as documented: a new Mutex (one server) or RedlockMutex (several) per acquisition, and a
 * new Semaphore / RedlockSemaphore for the semaphore workload, over
 * plain `new Redis(url)` clients. Defaults kept (10 ms retry interval, refresh at 80% of the lease), except
 * acquireTimeout, raised so a contended caller keeps waiting.
 */
export async function createRedisSemaphoreContestant(urls: readonly string[]): Promise<Contestant> {
  const clients = urls.map((url) => new Redis(url));
  await Promise.all(clients.map((client) => client.ping()));
  const options = { lockTimeout: LEASE_MS, acquireTimeout: MAX_WAIT_MS };
  return {
    lock: async (key) => {
      const mutex =
        clients.length === 1 ? new Mutex(clients[0], key, options) : new RedlockMutex(clients, key, options);
      await mutex.acquire();
      return mutex;
    },
    semaphore: async (key, limit) => {
      const semaphore =
        clients.length === 1
          ? new Semaphore(clients[0], key, limit, options)
          : new RedlockSemaphore(clients, key, limit, options);
      await semaphore.acquire();
      return semaphore;
    },
    close: () => closeClients(clients),
  };
}

export const redisSemaphoreEntry: ContestantEntry = {
  id: 'redis-semaphore',
  label: `redis-semaphore ${packageVersion('redis-semaphore')}`,
  role: 'peer',
  waits: true,
  create: createRedisSemaphoreContestant,
};
