import net from 'node:net';

/** One command MONITOR reported: its name (lower case) and whether a Lua script ran it. */
export interface MonitoredCommand {
  readonly name: string;
  readonly fromScript: boolean;
}

/**
 * MONITOR on a raw socket: every command the server runs, as it runs it. Not through ioredis: its monitor
 * mode can mistake a MONITOR line that arrives in the same chunk as the +OK for a reply to a command it
 * never sent ("Command queue state error") under load.
 */
export async function monitorCommands(
  host: string,
  port: number,
  onCommand: (command: MonitoredCommand) => void,
): Promise<{ stop(): void }> {
  const socket = net.connect({ host, port });
  let buffered = '';
  let started = false;
  await new Promise<void>((resolve, reject) => {
    socket.once('error', reject);
    socket.on('data', (chunk) => {
      buffered += chunk.toString('utf8');
      let newline: number;
      while ((newline = buffered.indexOf('\r\n')) >= 0) {
        const line = buffered.slice(0, newline);
        buffered = buffered.slice(newline + 2);
        if (!started) {
          if (line !== '+OK') {
            reject(new Error(`MONITOR answered ${line}`));
            return;
          }
          started = true;
          resolve();
          continue;
        }
        // +1795396672.919552 [0 127.0.0.1:53942] "eval" "..." — or [0 lua] for a script's own commands.
        const match = /^\+\S+ \[\d+ ([^\]]+)\] "((?:[^"\\]|\\.)*)"/.exec(line);
        if (match) onCommand({ name: match[2].toLowerCase(), fromScript: match[1] === 'lua' });
      }
    });
    socket.write('MONITOR\r\n');
  });
  socket.on('error', () => undefined);
  return { stop: () => socket.destroy() };
}
