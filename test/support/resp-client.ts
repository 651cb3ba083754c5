import net from 'node:net';

/** A reply of the RESP protocol: simple and bulk strings, integers, null, arrays. Errors reject. */
export type RespReply = string | number | null | RespReply[];

/**
 * Sends one command on a fresh connection and resolves with its reply. The harness uses it instead of
 * ioredis so that probing a server that is starting, paused or gone never retries, queues or logs.
 */
export function sendCommand(
  port: number,
  args: readonly string[],
  options: { host?: string; timeoutMs?: number } = {},
): Promise<RespReply> {
  const { host = '127.0.0.1', timeoutMs = 1000 } = options;
  return new Promise((resolve, reject) => {
    const socket = net.connect({ host, port });
    let buffer = Buffer.alloc(0);
    const finish = (error: Error | undefined, reply?: RespReply): void => {
      clearTimeout(timer);
      socket.destroy();
      if (error) reject(error);
      else resolve(reply ?? null);
    };
    const timer = setTimeout(
      () => finish(new Error(`redis ${host}:${port} did not answer ${args[0]} within ${timeoutMs} ms`)),
      timeoutMs,
    );
    socket.on('error', (error) => finish(error));
    socket.on('connect', () => socket.write(encodeCommand(args)));
    socket.on('data', (chunk) => {
      buffer = Buffer.concat([buffer, chunk]);
      try {
        const parsed = parseReply(buffer, 0);
        if (parsed) finish(undefined, parsed.reply);
      } catch (error) {
        finish(error as Error);
      }
    });
  });
}

function encodeCommand(args: readonly string[]): string {
  return `*${args.length}\r\n` + args.map((arg) => `$${Buffer.byteLength(arg)}\r\n${arg}\r\n`).join('');
}

/** Parses one reply starting at `offset`; undefined while the buffer does not hold all of it yet. */
function parseReply(buffer: Buffer, offset: number): { reply: RespReply; end: number } | undefined {
  const lineEnd = buffer.indexOf('\r\n', offset);
  if (lineEnd < 0) return undefined;
  const type = String.fromCharCode(buffer[offset]);
  const line = buffer.toString('utf8', offset + 1, lineEnd);
  switch (type) {
    case '+':
      return { reply: line, end: lineEnd + 2 };
    case '-':
      throw new Error(`redis error: ${line}`);
    case ':':
      return { reply: Number(line), end: lineEnd + 2 };
    case '$': {
      const length = Number(line);
      if (length < 0) return { reply: null, end: lineEnd + 2 };
      const start = lineEnd + 2;
      if (buffer.length < start + length + 2) return undefined;
      return { reply: buffer.toString('utf8', start, start + length), end: start + length + 2 };
    }
    case '*': {
      const count = Number(line);
      if (count < 0) return { reply: null, end: lineEnd + 2 };
      const items: RespReply[] = [];
      let end = lineEnd + 2;
      for (let i = 0; i < count; i++) {
        const item = parseReply(buffer, end);
        if (!item) return undefined;
        items.push(item.reply);
        end = item.end;
      }
      return { reply: items, end };
    }
    default:
      throw new Error(`unexpected RESP reply type ${JSON.stringify(type)}`);
  }
}
