/**
 * Is every client family as fast as a module-owned connection? This library over an owned connection and over a
 * lent client of each family (the library's own ioredis, an application's ioredis 5 and 6 from
 * test/matrix/lent-clients, iovalkey, node-redis 5 and 4), in one process, the contestants taking turns slice by
 * slice (as the benchmark's serial and parallel workloads do), the order rotated every round. Prints each
 * round's acquisitions per second, then per family the median over rounds of its ratio to the owned connection
 * in the same round (a ratio per round, so the machine's drift from one round to the next cancels out):
 *
 *   npx ts-node --transpile-only test/bench/profile/client-families.ts [workloads=parallel64,redlock5-parallel64] [rounds=5] [slice ms=250]
 *
 * Workloads: serial, parallel64 (one Redis), redlock5-serial, redlock5-parallel64 (five servers).
 * After the rounds, one more slice per family counts the script commands the servers ran per acquisition (INFO
 * commandstats: EVAL and EVALSHA, a batch once): the same figure for every family means the same path (a
 * tick's calls batched), whatever the noise of the timings.
 */
import { startBenchServers } from '../bench-servers';
import { type ClientOwnership, type Contestant, createLibraryContestant } from '../contestants';
import { rotated } from '../measure/rotated';
import { Samples, median } from '../stats';
import { runParallel } from '../workloads/parallel.workload';
import { runSerial } from '../workloads/serial.workload';
import { commandStats, statsDelta } from '../../support/redis-stats';

const FAMILIES: readonly ClientOwnership[] = [
  'owned',
  'borrowed',
  'borrowed-ioredis5',
  'borrowed-ioredis6',
  'borrowed-iovalkey',
  'borrowed-node-redis',
  'borrowed-node-redis4',
];
const WORKLOADS: Record<string, { five: boolean; callers: number }> = {
  serial: { five: false, callers: 1 },
  parallel64: { five: false, callers: 64 },
  'redlock5-serial': { five: true, callers: 1 },
  'redlock5-parallel64': { five: true, callers: 64 },
};
const SLICES = 8;

async function main(): Promise<void> {
  const [workloadsArg = 'parallel64,redlock5-parallel64', roundsArg = '5', sliceArg = '250'] = process.argv.slice(2);
  const workloads = workloadsArg.split(',');
  for (const id of workloads) if (!WORKLOADS[id]) throw new Error(`unknown workload ${id}`);
  const rounds = Number(roundsArg);
  const sliceMs = Number(sliceArg);
  const servers = await startBenchServers();
  const lineups = new Map<boolean, Map<ClientOwnership, Contestant>>();
  try {
    for (const five of new Set(workloads.map((id) => WORKLOADS[id].five))) {
      const urls = five ? servers.five.map((server) => server.url) : [servers.single.url];
      const lineup = new Map<ClientOwnership, Contestant>();
      for (const family of FAMILIES) lineup.set(family, await createLibraryContestant(urls, family));
      lineups.set(five, lineup);
      for (const [family, contestant] of lineup) await runParallel(contestant, `warm:${five}:${family}`, 64, 400);
    }
    for (const id of workloads) {
      const { five, callers } = WORKLOADS[id];
      const lineup = lineups.get(five) as Map<ClientOwnership, Contestant>;
      const ratios = new Map<ClientOwnership, number[]>(FAMILIES.map((family) => [family, []]));
      process.stdout.write(`\n${id} (${five ? 5 : 1} server(s), ${callers} caller(s)), acquisitions per second:\n`);
      process.stdout.write(`${'round'.padEnd(6)}${FAMILIES.map((family) => family.padStart(22)).join('')}\n`);
      for (let round = 0; round < rounds; round++) {
        const totals = new Map<ClientOwnership, { cycles: number; ms: number }>();
        for (let slice = 0; slice < SLICES; slice++) {
          for (const family of rotated(FAMILIES, round * SLICES + slice)) {
            const contestant = lineup.get(family) as Contestant;
            const key = `families:${id}:${round}:${family}`;
            const result =
              callers === 1
                ? await runSerial(contestant, key, sliceMs, new Samples())
                : await runParallel(contestant, key, callers, sliceMs);
            const total = totals.get(family) ?? { cycles: 0, ms: 0 };
            total.cycles += result.cycles;
            total.ms += result.elapsedMs;
            totals.set(family, total);
          }
        }
        const rate = (family: ClientOwnership): number => {
          const total = totals.get(family) as { cycles: number; ms: number };
          return (total.cycles * 1000) / total.ms;
        };
        for (const family of FAMILIES) ratios.get(family)?.push(rate(family) / rate('owned'));
        process.stdout.write(
          `${String(round + 1).padEnd(6)}${FAMILIES.map((family) => rate(family).toFixed(0).padStart(22)).join('')}\n`,
        );
      }
      process.stdout.write(
        `${'÷ owned'.padEnd(6)}${FAMILIES.map((family) => `${median(ratios.get(family) ?? []).toFixed(2)}×`.padStart(22)).join('')}\n`,
      );
      const urls = five ? servers.five.map((server) => server.url) : [servers.single.url];
      const perAcquisition: string[] = [];
      for (const family of FAMILIES) {
        const before = await Promise.all(urls.map((url) => commandStats(url)));
        const contestant = lineup.get(family) as Contestant;
        const key = `families:${id}:count:${family}`;
        const result =
          callers === 1
            ? await runSerial(contestant, key, sliceMs, new Samples())
            : await runParallel(contestant, key, callers, sliceMs);
        const after = await Promise.all(urls.map((url) => commandStats(url)));
        let scripts = 0;
        for (let i = 0; i < urls.length; i++) {
          const ran = statsDelta(before[i], after[i]);
          scripts += (ran.evalsha ?? 0) + (ran.eval ?? 0);
        }
        perAcquisition.push((scripts / result.cycles).toFixed(2).padStart(22));
      }
      process.stdout.write(`${'EVAL*'.padEnd(6)}${perAcquisition.join('')}  (script commands per acquisition)\n`);
    }
  } finally {
    for (const lineup of lineups.values()) await Promise.allSettled([...lineup.values()].map((c) => c.close()));
    await servers.stop();
  }
}

main().then(
  () => process.exit(0),
  (error: unknown) => {
    process.stderr.write(`${error instanceof Error ? error.stack : String(error)}\n`);
    process.exit(1);
  },
);
