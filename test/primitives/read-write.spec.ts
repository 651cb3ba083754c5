import { setTimeout as sleep } from 'node:timers/promises';
import { LockLostError, LockNotAcquiredError, LockOptionsError, type LockService } from '../../lib';
import { twoLockServices } from '../core/helpers/contenders';
import { rejectionOf } from '../core/helpers/timing';
import { eventually } from '../support/eventually';
import { quorumRecords } from '../support/permit-records';
import { trackLockApps, uniqueKey } from '../support/lock-app';
import { describeEachStore, StoreUnderTest, storesUnderTest } from '../support/store-matrix';

/** Resolves once `count()` reaches `target` (a barrier for callers inside a lock), or fails after `ms`. */
async function until(count: () => number, target: number, ms: number): Promise<void> {
  const deadline = performance.now() + ms;
  while (count() < target) {
    if (performance.now() > deadline) throw new Error(`only ${count()} of ${target} arrived in ${ms} ms`);
    await sleep(5);
  }
}

describeEachStore(
  'read-write lock (%s store)',
  (_name, fixture) => {
    let store: StoreUnderTest;
    beforeAll(async () => {
      store = await fixture.setup();
    });
    afterAll(() => store?.teardown());
    const apps = trackLockApps();

    it('5 readers over two services are inside together; inspect shows a read-write lock with 5 holders and their fences', async () => {
      const [first, second] = await twoLockServices(store, apps);
      const key = uniqueKey('readers');
      let inside = 0;
      const fences: number[] = [];
      let holders = 0;
      // One inspect, by whichever reader sees all five first; nobody leaves before it has answered (a reader
      // leaving meanwhile would make it count fewer than five, which is no fault of the store).
      let inspected: Promise<void> | undefined;
      await Promise.all(
        Array.from({ length: 5 }, (_, i) =>
          (i % 2 === 0 ? first : second).withLock(
            key,
            async (lock) => {
              inside++;
              fences.push(lock.fence);
              // Nobody leaves before all five are in: that can only end if they overlap.
              await until(() => inside, 5, 5_000);
              inspected ??= first.inspect(key).then((info) => {
                expect(info?.kind).toBe('read-write');
                holders = info?.holders.length ?? 0;
                // Each holder's fence is the one its Lock reports, on every store. On Redlock that is the grant's
                // fence (the highest of its quorum, written back): inspect reports the value a quorum of nodes
                // records for the holder, not the highest any node does (a node that granted after the quorum was
                // in records what its own counter gave: a reader granted 1 was listed with 4 in 15 of 60 runs).
                const reported = (info?.holders ?? []).map((holder) => holder.fence).sort((a, b) => a - b);
                expect(reported).toEqual([...fences].sort((a, b) => a - b));
              });
              await inspected;
              await sleep(20);
            },
            { mode: 'read', wait: 10_000 },
          ),
        ),
      );
      // Every reader holds a quorum of the nodes, and inspect lists each of them, on every store.
      expect(holders).toBe(5);
      // Each reader its own fence, on every store (on Redlock, before fences by stride, the five readers had only
      // 3 distinct fences in 6 of 60 runs: readers granted at the same moment took the same highest value from
      // different nodes).
      expect(new Set(fences).size).toBe(5);
      expect(await first.isLocked(key)).toBe(false);
    });

    // Redlock rows only: the in-process store and one Redis have no nodes to disagree.
    if (_name.startsWith('redlock'))
      it("inspect reports a reader's own fence, not the higher one a node that granted after the quorum recorded", async () => {
        const [locks] = await twoLockServices(store, apps);
        const key = uniqueKey('rw-late-node');
        const reader = await locks.acquire(key, { mode: 'read' });
        // Each node records the value its own counter gave (by stride, one of them the grant's), and the grant's
        // is recorded on a quorum. The node outside that quorum (here one answering after it was in) may record
        // more than the grant's: made so by hand.
        const records = await quorumRecords(store.servers, key, reader.token, reader.fence, 2);
        const outside = records.findIndex((record) => record.fence !== reader.fence);
        expect(outside).toBeGreaterThanOrEqual(0);
        const { member } = records[outside];
        expect(
          Number(
            await store.servers[outside].command('HSET', `lock:{${key}}:permits`, member, String(reader.fence + 10)),
          ),
        ).toBe(0);
        const info = await locks.inspect(key);
        expect(info?.holders.map((holder) => holder.fence)).toEqual([reader.fence]);
        await reader.release();
      });

    it('a writer excludes readers and other writers: 4 writers and 8 readers x 3 rounds over two services', async () => {
      const [first, second] = await twoLockServices(store, apps);
      const key = uniqueKey('rw-mix');
      let readers = 0;
      let writers = 0;
      let maxReaders = 0;
      const violations: string[] = [];
      const writerFences: number[] = [];
      const run = async (locks: LockService, mode: 'read' | 'write'): Promise<void> => {
        for (let round = 0; round < 3; round++) {
          await locks.withLock(
            key,
            async (lock) => {
              if (mode === 'write') {
                writers++;
                writerFences.push(lock.fence);
                if (readers > 0 || writers > 1)
                  violations.push(`writer beside ${readers} readers and ${writers - 1} writers`);
                await sleep(10);
                writers--;
              } else {
                readers++;
                maxReaders = Math.max(maxReaders, readers);
                if (writers > 0) violations.push('reader beside a writer');
                await sleep(25);
                readers--;
              }
            },
            { mode, wait: 60_000 },
          );
        }
      };
      await Promise.all([
        ...Array.from({ length: 4 }, (_, i) => run(i % 2 === 0 ? first : second, 'write')),
        ...Array.from({ length: 8 }, (_, i) => run(i % 2 === 0 ? first : second, 'read')),
      ]);
      expect(violations).toEqual([]);
      expect(writerFences).toHaveLength(12);
      expect(maxReaders).toBeGreaterThan(1);
      expect(await first.isLocked(key)).toBe(false);
    });

    it('a writer behind a continuous stream of readers gets in within 3 s (new readers queue behind it)', async () => {
      const [first, second] = await twoLockServices(store, apps);
      const key = uniqueKey('rw-stream');
      let readers = 0;
      let gapsBeforeWriter = 0;
      let writerAsked = false;
      let stop = false;
      let stopped!: () => void;
      const stopping = new Promise<void>((resolve) => (stopped = resolve));
      const streams: Promise<void>[] = [];
      // A new reader every 20 ms, each reading for 1.2 s: about 60 overlap, the key is never free of readers
      // unless a stall of the loaded test machine outlasts a reading, letting every reader's timer fire before
      // the next grant is read (with 400 ms that took a 0.4 s stall). Readers let in after the writer leave at once.
      const stream = (async () => {
        for (let i = 0; !stop; i++) {
          streams.push(
            (i % 2 === 0 ? first : second)
              .withLock(
                key,
                async () => {
                  readers++;
                  await Promise.race([sleep(1_200), stopping]);
                  readers--;
                  if (readers === 0 && !writerAsked) gapsBeforeWriter++;
                },
                { mode: 'read', wait: 30_000 },
              )
              .catch(() => undefined),
          );
          await sleep(20);
        }
      })();
      await sleep(600);
      expect(readers).toBeGreaterThan(1);
      // Until now the readers never all left at once: without writer preference the writer would starve.
      expect(gapsBeforeWriter).toBe(0);
      writerAsked = true;
      const askedAt = performance.now();
      let waited: number;
      try {
        waited = await second.withLock(
          key,
          async () => {
            expect(readers).toBe(0);
            await sleep(20);
            return performance.now() - askedAt;
          },
          { wait: 10_000 },
        );
      } finally {
        // Also when the writer failed: the stream must not keep starting readers for the rest of the file.
        stop = true;
        stopped();
      }
      await stream;
      await Promise.all(streams);
      console.log(JSON.stringify({ store: store.name, writerWaitedBehindReaderStreamMs: Math.round(waited) }));
      // Starving would be the whole 10 s wait; the readers inside when it asks hold at most 1.2 s more.
      expect(waited).toBeLessThan(3_000);
    });

    it('several readers waiting behind a writer all get in on its one release (the wake-up is passed on)', async () => {
      const [writerSide, readerSide] = await twoLockServices(store, apps);
      const key = uniqueKey('rw-wake');
      const writer = await writerSide.acquire(key, { ttl: 30_000 });
      let inside = 0;
      const readersDone = Promise.all(
        Array.from({ length: 6 }, () =>
          readerSide.withLock(
            key,
            async () => {
              inside++;
              await until(() => inside, 6, 10_000);
            },
            { mode: 'read', wait: 20_000, ttl: 30_000 },
          ),
        ),
      );
      await sleep(400);
      expect(inside).toBe(0);
      const releasedAt = performance.now();
      await writer.release();
      await readersDone;
      // One release, six readers in together: a fallback wake-up would have waited for the 30 s lease.
      expect(performance.now() - releasedAt).toBeLessThan(5_000);
    });

    it("a reader's busy error says a writer holds or claims the key; a writer's that readers, or another owner, hold it", async () => {
      const [first, second] = await twoLockServices(store, apps);
      const key = uniqueKey('rw-busy');
      const writer = await first.acquire(key, { mode: 'write' });
      const reader = await rejectionOf(second.acquire(key, { mode: 'read', wait: 0 }));
      expect(reader).toBeInstanceOf(LockNotAcquiredError);
      expect((reader as Error).message).toBe(
        `Lock on "${key}" not acquired for reading: held or claimed by a writer. Retry later, or set the 'wait' option to queue for it.`,
      );
      expect((reader as LockNotAcquiredError).details).toEqual({ wait: 0, mode: 'read' });
      await writer.release();
      const readers = await first.acquire(key, { mode: 'read' });
      const otherWriter = await rejectionOf(second.acquire(key, { mode: 'write', wait: 30 }));
      expect((otherWriter as Error).message).toBe(
        `Lock on "${key}" not acquired: still held by readers after waiting 30 ms. Retry later or raise the 'wait' option.`,
      );
      expect((otherWriter as LockNotAcquiredError).details).toEqual({ wait: 30, heldBy: 'readers' });
      const oneAttempt = await rejectionOf(second.acquire(key, { wait: 0 }));
      expect((oneAttempt as Error).message).toBe(
        `Lock on "${key}" not acquired: held by readers. Retry later, or set the 'wait' option to queue for it.`,
      );
      await readers.release();
      // A writer turned away by a writer: another owner, as for a mutex.
      const holder = await first.acquire(key, { mode: 'write' });
      const behindWriter = await rejectionOf(second.acquire(key, { mode: 'write', wait: 0 }));
      expect((behindWriter as Error).message).toBe(
        `Lock on "${key}" not acquired: held by another owner. Retry later, or set the 'wait' option to queue for it.`,
      );
      expect((behindWriter as LockNotAcquiredError).details).toEqual({ wait: 0 });
      await holder.release();
      // Several keys, readers on one and a writer on the other: never "held by readers", whatever the order.
      const [readKey, writeKey] = [uniqueKey('rw-busy-read'), uniqueKey('rw-busy-write')];
      const reader2 = await first.acquire(readKey, { mode: 'read' });
      const writer2 = await first.acquire(writeKey);
      for (const keys of [
        [readKey, writeKey],
        [writeKey, readKey],
      ]) {
        const both = await rejectionOf(second.acquire(keys, { wait: 0 }));
        expect((both as LockNotAcquiredError).details).toEqual({ wait: 0 });
      }
      await Promise.all([reader2.release(), writer2.release()]);
    });

    it("a crashed reader's lease is reclaimed after its ttl: a writer gets in then", async () => {
      const [crashed, writerSide] = await twoLockServices(store, apps);
      const key = uniqueKey('rw-crash');
      const grantedAt = performance.now();
      await crashed.acquire(key, { mode: 'read', ttl: 800, autoExtend: false });
      expect(await writerSide.tryAcquire(key)).toBeNull();
      const writer = await writerSide.acquire(key, { wait: 10_000 });
      expect(performance.now() - grantedAt).toBeGreaterThanOrEqual(700);
      await writer.release();
    });

    it('a writer that gives up withdraws its intent: readers get in at once afterwards', async () => {
      const [readerSide, writerSide] = await twoLockServices(store, apps);
      const key = uniqueKey('rw-withdraw');
      const reader = await readerSide.acquire(key, { mode: 'read' });
      expect(((await rejectionOf(writerSide.acquire(key, { wait: 300, ttl: 20_000 }))) as Error).message).toMatch(
        /not acquired/,
      );
      // The intent (20 s) would refuse new readers; withdrawn, they are admitted.
      await eventually(
        async () => {
          const next = await readerSide.tryAcquire(key, { mode: 'read' });
          await next?.release();
          return next !== null;
        },
        1_000,
        'a new reader got in after the writer gave up',
      );
      await reader.release();
    });

    it('a single-attempt writer meeting readers records no intent: nothing to withdraw, readers admitted all along', async () => {
      const [readerSide, writerSide] = await twoLockServices(store, apps);
      const key = uniqueKey('rw-single-attempt');
      const reader = await readerSide.acquire(key, { mode: 'read' });
      // The writer side's withdrawals are recorded and not made: an intent left by a writer would stay, and
      // refuse the new reader below.
      const withdrawals: Parameters<LockService['store']['withdraw']>[] = [];
      const { store: writerStore } = writerSide;
      const withdraw = writerStore.withdraw.bind(writerStore);
      writerStore.withdraw = async (...call) => {
        withdrawals.push(call);
      };
      try {
        // tryAcquire and wait: 0 make one attempt: an intent would only be withdrawn at once, and would turn new
        // readers away meanwhile (before: recorded and withdrawn, 3 round trips).
        expect(await writerSide.tryAcquire(key, { ttl: 20_000 })).toBeNull();
        expect(await rejectionOf(writerSide.acquire(key, { wait: 0, ttl: 20_000 }))).toBeInstanceOf(
          LockNotAcquiredError,
        );
        expect(withdrawals).toEqual([]);
        const next = await readerSide.tryAcquire(key, { mode: 'read' });
        expect(next).not.toBeNull();
        await next?.release();
        // A writer that waits does record its intent (withdrawn when it gives up): the spy sees that withdrawal.
        expect(await rejectionOf(writerSide.acquire(key, { wait: 300, ttl: 20_000 }))).toBeInstanceOf(
          LockNotAcquiredError,
        );
        expect(withdrawals).toHaveLength(1);
        await withdraw(...withdrawals[0]);
      } finally {
        writerStore.withdraw = withdraw;
      }
      await reader.release();
    });

    it('a reader deleted under its holder (forceRelease) aborts its signal', async () => {
      const [holderSide, operator] = await twoLockServices(store, apps);
      const key = uniqueKey('rw-force');
      const readers = await Promise.all([0, 1].map(() => holderSide.acquire(key, { mode: 'read', ttl: 600 })));
      expect(await operator.forceRelease(key)).toBe(true);
      await eventually(
        async () => readers.every((lock) => lock.signal.aborted),
        3_000,
        'every reader saw its signal abort',
      );
      expect(readers[0].signal.reason).toBeInstanceOf(LockLostError);
      const writer = await operator.tryAcquire(key);
      expect(writer).not.toBeNull();
      expect(writer?.fence).toBeGreaterThan(Math.max(...readers.map((lock) => lock.fence)));
      await writer?.release();
    });

    it('reentrancy: the write lock covers a nested read (borrowed); read → write is a LockOptionsError; read in read is borrowed', async () => {
      const [locks] = await twoLockServices(store, apps);
      const key = uniqueKey('rw-reentry');
      await locks.withLock(key, async (write) => {
        const read = await locks.acquire(key, { mode: 'read' });
        expect(read.token).toBe(write.token);
        await read.release();
        expect(write.signal.aborted).toBe(false);
        expect((await locks.inspect(key))?.kind).toBe('mutex');
      });
      await locks.withLock(
        key,
        async (read) => {
          const upgrade = await rejectionOf(locks.acquire(key, { mode: 'write', wait: 100 }));
          expect(upgrade).toBeInstanceOf(LockOptionsError);
          expect((upgrade as Error).message).toContain('would wait for itself');
          const nested = await locks.acquire(key, { mode: 'read' });
          expect(nested.token).toBe(read.token);
          await nested.release();
          expect(await rejectionOf(locks.acquire(key, { limit: 2 }))).toBeInstanceOf(LockOptionsError);
        },
        { mode: 'read' },
      );
      expect(await locks.isLocked(key)).toBe(false);
    });

    it('a semaphore on a key held by readers is a LockOptionsError; readers on a semaphore too', async () => {
      const [first, second] = await twoLockServices(store, apps);
      const key = uniqueKey('rw-mix-kinds');
      const reader = await first.acquire(key, { mode: 'read' });
      expect(await rejectionOf(second.tryAcquire(key, { limit: 3 }))).toBeInstanceOf(LockOptionsError);
      await reader.release();
      const permit = await first.acquire(key, { limit: 3 });
      const error = await rejectionOf(second.tryAcquire(key, { mode: 'read' }));
      expect(error).toBeInstanceOf(LockOptionsError);
      expect((error as LockOptionsError).option).toBe('mode');
      await permit.release();
    });
    it("a writer whose ttl is shorter than the readers' leases keeps new readers out while it waits (its mark is renewed)", async () => {
      const [readerSide, writerSide] = await twoLockServices(store, apps);
      const key = uniqueKey('short-writer');
      const reader = await readerSide.acquire(key, { mode: 'read', ttl: 3_000 });
      const startedAt = performance.now();
      const writer = writerSide.acquire(key, { ttl: 300, wait: 8_000 });
      await sleep(600);
      // On Redis and Redlock, a mark that lapsed after 300 ms would let this reader in,
      // keeping the writer out until 3 s.
      const late = await readerSide.tryAcquire(key, { mode: 'read' });
      expect(late).toBeNull();
      await sleep(300);
      await reader.release();
      const written = await writer;
      expect(performance.now() - startedAt).toBeLessThan(2_500);
      await written.release();
      await late?.release();
    });

    // Two instances share only a Redis store (the in-process store is one per module).
    if (_name !== 'memory')
      it('a writer waiting at shutdown withdraws its mark: readers of the other instance are not held off', async () => {
        const readerSide = await apps.start(store.options());
        const writerSide = await apps.start(store.options());
        const key = uniqueKey('writer-at-shutdown');
        const reader = await readerSide.locks.acquire(key, { mode: 'read', ttl: 10_000 });
        const writer = writerSide.locks.acquire(key, { ttl: 8_000, wait: 8_000 }).catch((error: unknown) => error);
        await sleep(300);
        await writerSide.close();
        expect(await writer).toBeInstanceOf(Error);
        await reader.release();
        // Not refused until the departed writer's mark expires (7.7 s later).
        const next = await readerSide.locks.acquire(key, { mode: 'read', wait: 2_000 });
        await next.release();
      });
  },
  storesUnderTest(['memory', 'redis', 'redlock3']),
);
