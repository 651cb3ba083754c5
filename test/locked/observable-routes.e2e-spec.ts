import { BadRequestException, Controller, Get, Param, Sse, type MessageEvent } from '@nestjs/common';
import http from 'node:http';
import { Observable, Subject, concat, interval, map, take, takeUntil, tap, throwError } from 'rxjs';
import request from 'supertest';
import { LockService } from '../../lib';
import { Locked } from '../../lib/decorators';
import { startRedis, type RedisProcess } from '../support/redis-server';
import { eventually, within } from './helpers/gates';
import { startLockedApp, type LockedApp } from './helpers/locked-app';

/** Per stream id: a subject that ends the stream, and how many values it emitted so far. */
const stops = new Map<string, Subject<void>>();
const emitted = new Map<string, number>();
const stopOf = (id: string): Subject<void> => stops.get(id) ?? stops.set(id, new Subject<void>()).get(id)!;

@Controller()
class StreamsController {
  constructor(private readonly locks: LockService) {}

  /** A plain Observable result: Nest answers with its last value once it completes. */
  @Get('feed/:id')
  @Locked('feed:{params.id}', { wait: 0 })
  feed(@Param('id') id: string): Observable<{ tick: number; fence: number | undefined }> {
    return interval(20).pipe(
      map((tick) => ({ tick, fence: this.locks.current()?.fence })),
      tap(() => emitted.set(id, (emitted.get(id) ?? 0) + 1)),
      takeUntil(stopOf(id)),
    );
  }

  @Get('broken/:id')
  @Locked('broken:{params.id}', { wait: 0 })
  broken(): Observable<number> {
    return concat(
      interval(10).pipe(take(2)),
      throwError(() => new BadRequestException('the stream broke')),
    );
  }

  /** An endless server-sent event stream: only the client going away ends it. */
  @Sse('events/:id')
  @Locked('events:{params.id}', { wait: 0 })
  events(): Observable<MessageEvent> {
    return interval(20).pipe(map((tick) => ({ data: { tick, fence: this.locks.current()?.fence } })));
  }
}

/** Opens an SSE stream and resolves with the first event's data, and a way to drop the connection. */
function openEventStream(url: string): Promise<{ status: number; firstData: string; disconnect(): void }> {
  return new Promise((resolve, reject) => {
    const outgoing = http.get(url, (response) => {
      let buffered = '';
      response.setEncoding('utf8');
      response.on('data', (chunk: string) => {
        buffered += chunk;
        const match = /^data: (.*)$/m.exec(buffered);
        if (match)
          resolve({ status: response.statusCode ?? 0, firstData: match[1], disconnect: () => outgoing.destroy() });
      });
      response.on('error', () => undefined);
    });
    outgoing.on('error', (error) => {
      if (!outgoing.destroyed) reject(error);
    });
  });
}

describe('@Locked on route handlers that return an Observable (real Nest app, real Redis)', () => {
  let redis: RedisProcess;
  let locked: LockedApp;

  beforeAll(async () => {
    redis = await startRedis();
    locked = await startLockedApp(redis.url, { controllers: [StreamsController] });
  });
  afterAll(async () => {
    stops.forEach((stop) => stop.next());
    await locked?.close();
    await redis?.stop();
  });

  it('holds the lock while the Observable emits: a second request meanwhile gets 409; after completion the lock is free', async () => {
    const first = request(locked.server)
      .get('/feed/1')
      .then((response) => response);
    await eventually(async () => (emitted.get('1') ?? 0) >= 3, 5000, 'the first stream emits');

    const second = await request(locked.server).get('/feed/1');
    expect(second.status).toBe(409);
    expect(Number(second.headers['retry-after'])).toBeGreaterThanOrEqual(1);
    expect(await locked.locks.isLocked('feed:1')).toBe(true);

    stopOf('1').next();
    const done = await first;
    expect(done.status).toBe(200);
    // The values were produced under the lock (current() inside the stream's callbacks).
    expect(done.body.tick).toBeGreaterThanOrEqual(2);
    expect(done.body.fence).toBeGreaterThan(0);
    // Released before the response was sent.
    expect(await locked.locks.isLocked('feed:1')).toBe(false);
  });

  it('an Observable that errors releases the lock and its error passes through', async () => {
    const response = await request(locked.server).get('/broken/1');
    expect(response.status).toBe(400);
    expect(response.body.message).toBe('the stream broke');
    expect(await locked.locks.isLocked('broken:1')).toBe(false);
  });

  it('an SSE client that disconnects mid-stream frees the lock', async () => {
    const stream = await within(openEventStream(`${locked.baseUrl}/events/1`), 5000, 'the first event');
    expect(stream.status).toBe(200);
    expect(JSON.parse(stream.firstData).fence).toBeGreaterThan(0);
    expect(await locked.locks.isLocked('events:1')).toBe(true);

    stream.disconnect();
    await eventually(
      async () => !(await locked.locks.isLocked('events:1')),
      2000,
      'lock released after the disconnect',
    );

    // And the stream can be opened again.
    const again = await within(openEventStream(`${locked.baseUrl}/events/1`), 5000, 'the first event, again');
    expect(again.status).toBe(200);
    again.disconnect();
    await eventually(async () => !(await locked.locks.isLocked('events:1')), 2000, 'lock released again');
  });
});
