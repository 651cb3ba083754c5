/** What closing needs of an ioredis client, of whichever copy of ioredis. */
interface Closable {
  quit(): Promise<unknown>;
  disconnect(): void;
}

/** QUIT, or a hard disconnect when QUIT does not answer within a second. */
export async function closeClients(clients: readonly Closable[]): Promise<void> {
  await Promise.all(
    clients.map(async (client) => {
      const timer = setTimeout(() => client.disconnect(), 1_000);
      try {
        await client.quit();
      } catch {
        client.disconnect();
      } finally {
        clearTimeout(timer);
      }
    }),
  );
}
