import { setTimeout as sleep } from 'node:timers/promises';
import { trackLockApps, uniqueKey } from '../support/lock-app';
import { monitorCommands } from '../support/monitor-client';
import type { RedisProcess } from '../support/redis-server';
import { CommandStats, commandStats, statsDelta } from '../support/redis-stats';
import { countScriptCalls } from '../support/script-calls';
import { StoreUnderTest, storeRows, storesUnderTest } from '../support/store-matrix';

const CALLERS = 8;
const ITERATIONS = 5;
const CRITICAL_SECTION_MS = 20;
/** Top-level commands a grant may cost: an attempt, a release, and a few for waking up (no polling loop). */
const MAX_COMMANDS_PER_ACQUISITION = 4;

/**
 * Counts the commands clients sent to a server, by name, through MONITOR: unlike INFO commandstats it
 * tells a client's command from one a Lua script ran (MONITOR reports those with the source "lua").
 */
async function monitorClientCommands(server: RedisProcess): Promise<{ counts: CommandStats; stop(): Promise<void> }> {
  const counts: CommandStats = {};
  const monitor = await monitorCommands(server.host, server.port, ({ name, fromScript }) => {
    if (!fromScript) counts[name] = (counts[name] ?? 0) + 1;
  });
  return {
    counts,
    stop: async () => monitor.stop(),
  };
}

function sum(stats: CommandStats, exclude: readonly string[] = []): number {
  return Object.entries(stats).reduce(
    (total, [command, calls]) => (exclude.includes(command) ? total : total + calls),
    0,
  );
}

describe.each(storeRows(storesUnderTest().filter((store) => store.usesRedis)))(
  'Redis commands per acquisition (%s store)',
  (name, fixture) => {
    let store: StoreUnderTest;
    beforeAll(async () => {
      store = await fixture.setup();
    });
    afterAll(() => store?.teardown());
    const apps = trackLockApps();

    it(`${CALLERS} callers x ${ITERATIONS} iterations on one key: waiting costs no polling`, async () => {
      const { locks } = await apps.start(store.options({ ttl: 10_000 }));
      const key = uniqueKey('contended');
      await (await locks.acquire(uniqueKey('warm-up'))).release();

      const monitors = await Promise.all(store.servers.map(monitorClientCommands));
      // MONITOR shows a batch of script calls as one EVALSHA: what batches carried beyond that is counted as written.
      const batched = countScriptCalls(store.servers.map((server) => server.port));
      onTestFinished(() => batched.stop());
      const before = await Promise.all(store.servers.map((server) => commandStats(server.url)));
      let inFlight = 0;
      let maxInFlight = 0;
      await Promise.all(
        Array.from({ length: CALLERS }, async () => {
          for (let i = 0; i < ITERATIONS; i++) {
            await locks.withLock(
              key,
              async () => {
                maxInFlight = Math.max(maxInFlight, ++inFlight);
                await sleep(CRITICAL_SECTION_MS);
                inFlight--;
              },
              { wait: 30_000 },
            );
          }
        }),
      );
      const after = await Promise.all(store.servers.map((server) => commandStats(server.url)));
      // MONITOR output trails the commands a little.
      await sleep(100);
      await Promise.all(monitors.map((monitor) => monitor.stop()));

      const acquisitions = CALLERS * ITERATIONS;
      const perServerStats = before.map((stats, i) => statsDelta(stats, after[i]));
      const clientCommands = monitors.map((monitor) => ({ ...monitor.counts }));
      // The test's own INFO reads are not the library's.
      for (const counts of clientCommands) delete counts.info;
      const clientTotal = clientCommands.reduce((total, counts) => total + sum(counts), 0) + batched.beyondCommands;
      const perAcquisitionPerServer = clientTotal / acquisitions / store.servers.length;

      console.log(
        JSON.stringify({
          store: name,
          acquisitions,
          callers: CALLERS,
          criticalSectionMs: CRITICAL_SECTION_MS,
          commandstats: perServerStats,
          clientCommands,
          scriptCallsInBatchesBeyondTheirCommand: batched.beyondCommands,
          clientCommandsPerAcquisitionPerServer: Number(perAcquisitionPerServer.toFixed(2)),
        }),
      );

      expect(maxInFlight).toBe(1);
      // Every grant is at least one command (a release handed to a waiter of the same process grants in the
      // same script, see local-handover.spec.ts): the monitor saw the traffic.
      expect(clientTotal).toBeGreaterThanOrEqual(acquisitions * store.servers.length);
      expect(perAcquisitionPerServer).toBeLessThanOrEqual(MAX_COMMANDS_PER_ACQUISITION);
    });
  },
);
