/**
 * Where one caller's acquire + release cycle spends its time, ours against redis-semaphore's, on the same
 * redis-server in one process, interleaved by rounds (median per segment over each round's cycles):
 *
 *   npx ts-node --transpile-only test/bench/profile/serial-timeline.ts [cycles per round=2000] [rounds=5]
 *
 * A cycle is cut at each socket write of a command and each reply read off the socket: client time before
 * the acquire is written, the acquire's round trip (Redis included), client time until acquire() resolves,
 * until the release is written, the release's round trip, and until release() resolves. It reaches into
 * both libraries' connections (a profiling aid, not a benchmark: the hooks add a little to every segment).
 */
import { Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import Redis from 'ioredis';
import { Mutex } from 'redis-semaphore';
import type { Socket } from 'node:net';
import { startBenchServers } from '../bench-servers';
import { LockModule, LockService } from '../../../lib';

@Module({})
class TimelineModule {}

const SEGMENTS = [
  'client → write',
  'acquire round trip',
  'reply → acquired',
  'acquired → write',
  'release round trip',
  'reply → released',
];

/** Records the moment of every write to and every read from `socket`, into `marks`. */
function hookSocket(socket: Socket, marks: { times: number[] }): void {
  const hooked = socket as Socket & { _write: Function; _writev?: Function };
  const write = hooked._write.bind(socket);
  hooked._write = (...args: unknown[]) => {
    marks.times.push(performance.now());
    return write(...args);
  };
  const writev = hooked._writev?.bind(socket);
  if (writev) {
    hooked._writev = (...args: unknown[]) => {
      marks.times.push(performance.now());
      return writev(...args);
    };
  }
  socket.prependListener('data', () => marks.times.push(performance.now()));
}

async function main(): Promise<void> {
  const [cyclesArg = '2000', roundsArg = '5'] = process.argv.slice(2);
  const cycles = Number(cyclesArg);
  const rounds = Number(roundsArg);
  const servers = await startBenchServers();
  const app = await NestFactory.createApplicationContext(
    {
      module: TimelineModule,
      imports: [LockModule.forRoot({ redis: servers.single.url, ttl: 30_000, autoExtend: true })],
    },
    { logger: ['error', 'warn'] },
  );
  const peerClient = new Redis(servers.single.url);
  try {
    const locks = app.get(LockService);
    const marks = { times: [] as number[] };
    const peerOptions = { lockTimeout: 30_000, acquireTimeout: 10_000 };
    const contestants: Record<string, () => Promise<unknown>> = {
      'nestjs-redis-lock': async () => {
        const lock = await locks.acquire('timeline');
        marks.times.push(performance.now());
        await lock.release();
      },
      'redis-semaphore': async () => {
        const mutex = new Mutex(peerClient, 'timeline-peer', peerOptions);
        await mutex.acquire();
        marks.times.push(performance.now());
        await mutex.release();
      },
    };
    // Warm up (this also opens the module's own connection, found below through the store it made).
    for (const run of Object.values(contestants)) for (let i = 0; i < 2000; i++) await run();
    const moduleConnection = (locks as unknown as { store: { node: { client: { connection: { stream: Socket } } } } })
      .store.node.client.connection;
    hookSocket(moduleConnection.stream, marks);
    hookSocket((peerClient as unknown as { stream: Socket }).stream, marks);
    const segments = new Map<string, number[][]>();
    for (let round = 0; round < rounds; round++) {
      for (const [name, run] of Object.entries(contestants)) {
        const rows: number[][] = [];
        for (let i = 0; i < cycles; i++) {
          marks.times = [];
          const startedAt = performance.now();
          await run();
          const endedAt = performance.now();
          // write, reply, acquired, write, reply: anything else (a renewal, a reconnect) is left out.
          if (marks.times.length === 5) rows.push([startedAt, ...marks.times, endedAt]);
        }
        const medians = SEGMENTS.map((_, at) => {
          const spans = rows.map((row) => (row[at + 1] - row[at]) * 1000).sort((a, b) => a - b);
          return spans[spans.length >> 1];
        });
        segments.set(name, [...(segments.get(name) ?? []), medians]);
      }
    }
    process.stdout.write(
      `${'µs, median of rounds'.padEnd(22)}${SEGMENTS.map((segment) => segment.padStart(20)).join('')}${'cycle'.padStart(9)}\n`,
    );
    for (const [name, perRound] of segments) {
      const medians = SEGMENTS.map(
        (_, at) => perRound.map((round) => round[at]).sort((a, b) => a - b)[perRound.length >> 1],
      );
      const total = medians.reduce((sum, value) => sum + value, 0);
      process.stdout.write(
        `${name.padEnd(22)}${medians.map((value) => value.toFixed(1).padStart(20)).join('')}${total.toFixed(1).padStart(9)}\n`,
      );
    }
  } finally {
    await app.close();
    peerClient.disconnect();
    await servers.stop();
  }
}

void main();
