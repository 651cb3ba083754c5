import Redis from 'ioredis';
import type { StoreUnderTest } from '../../support/store-matrix';

/**
 * A counter that is NOT safe without the lock: read and write are separate steps, so two overlapping
 * read-modify-write sections lose an update. On Redis stores it is a plain key read with GET and written
 * with SET through a connection of its own (what a second process would see); in-process, a variable.
 */
export interface SharedCounter {
  read(): Promise<number>;
  write(value: number): Promise<void>;
  close(): Promise<void>;
}

export async function sharedCounter(store: StoreUnderTest, name: string): Promise<SharedCounter> {
  const server = store.servers[0];
  if (!server) {
    let value = 0;
    return {
      read: async () => value,
      write: async (next) => {
        value = next;
      },
      close: async () => undefined,
    };
  }
  const client = new Redis(server.url, { lazyConnect: true, maxRetriesPerRequest: 1 });
  await client.connect();
  const key = `counter:${name}`;
  return {
    read: async () => Number((await client.get(key)) ?? 0),
    write: async (next) => {
      await client.set(key, String(next));
    },
    close: async () => {
      await client.quit();
    },
  };
}
