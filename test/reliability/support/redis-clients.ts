import type { RedisProcess } from '../../support/redis-server';

/** One line of CLIENT LIST, the fields this suite reads. */
export interface ClientInfo {
  readonly id: string;
  readonly addr: string;
  /** Channels this connection is subscribed to. */
  readonly sub: number;
  /** The last command it ran, e.g. `evalsha`, `client|list`. */
  readonly cmd: string;
}

/** The server's connections, without the probe connection that asked (its last command is CLIENT LIST). */
export async function clientList(server: RedisProcess): Promise<ClientInfo[]> {
  const text = String(await server.command('CLIENT', 'LIST'));
  return text
    .trim()
    .split('\n')
    .map(
      (line) =>
        Object.fromEntries(
          line
            .trim()
            .split(' ')
            .map((field) => field.split('=', 2)),
        ) as Record<string, string>,
    )
    .filter((fields) => fields.cmd !== 'client|list')
    .map((fields) => ({ id: fields.id, addr: fields.addr, sub: Number(fields.sub), cmd: fields.cmd }));
}

/** CLIENT KILL ID of each connection given; returns how many the server killed. */
export async function killClients(server: RedisProcess, clients: readonly ClientInfo[]): Promise<number> {
  let killed = 0;
  for (const client of clients) killed += Number(await server.command('CLIENT', 'KILL', 'ID', client.id));
  return killed;
}
