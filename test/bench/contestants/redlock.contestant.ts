import Redis from 'ioredis';
import Redlock from 'redlock';
import { LEASE_MS, type Contestant, type ContestantEntry } from './contestant';
import { packageVersion } from './package-version';
import { closeClients } from './close-clients';

/**
 * redlock 5 as documented: a Redlock over plain `new Redis(url)` clients, acquire() and release().
 * retryCount is raised so a contended caller keeps trying (the default 10 would fail the benchmark);
 * retryDelay (200 ms) and retryJitter (100 ms) keep their defaults.
 */
export async function createRedlockContestant(urls: readonly string[]): Promise<Contestant> {
  const clients = urls.map((url) => new Redis(url));
  await Promise.all(clients.map((client) => client.ping()));
  const redlock = new Redlock(clients, { retryCount: 100_000 });
  // Redlock emits 'error' for failed attempts on a node; an EventEmitter without a listener would throw.
  redlock.on('error', () => undefined);
  return {
    lock: (key) => redlock.acquire([key], LEASE_MS),
    close: () => closeClients(clients),
  };
}

export const redlockEntry: ContestantEntry = {
  id: 'redlock',
  label: `redlock ${packageVersion('redlock')}`,
  role: 'peer',
  waits: true,
  semaphoreUnsupported: 'has no semaphore (mutex only)',
  create: createRedlockContestant,
};
