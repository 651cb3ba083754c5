/**
 * Runs one workload against this library alone, on a redis-server of its own, for profiling:
 *
 *   node --cpu-prof --cpu-prof-dir=/tmp/lock-prof -r ts-node/register/transpile-only \
 *     test/bench/profile/profile-workload.ts <serial|parallel64|contended-8x1ms|hotkey-8|...|redlock5-parallel64> [seconds] [borrowed]
 *   npx ts-node --transpile-only test/bench/profile/summarize-cpu-profile.ts /tmp/lock-prof/<file>.cpuprofile
 *
 * The servers are started before and stopped after the measured part, so the profile is mostly the workload.
 */
import { startBenchServers } from '../bench-servers';
import { libraryBorrowedEntry, libraryEntry, type Contestant } from '../contestants';
import { runTurns } from '../workloads/turns.workload';
import { runParallel } from '../workloads/parallel.workload';
import { runSerial } from '../workloads/serial.workload';
import { WORKLOADS } from '../workloads/workload-specs';
import { Samples } from '../stats';

async function main(): Promise<void> {
  const [id = 'serial', secondsArg = '5', clients = 'owned'] = process.argv.slice(2);
  const workload = WORKLOADS.find((candidate) => candidate.id === id);
  if (!workload)
    throw new Error(`unknown workload ${id}; one of ${WORKLOADS.map((candidate) => candidate.id).join(', ')}`);
  const durationMs = Number(secondsArg) * 1000;
  const servers = await startBenchServers();
  let contestant: Contestant | undefined;
  try {
    const urls = workload.topology === 'single' ? [servers.single.url] : servers.five.map((server) => server.url);
    contestant = await (clients === 'borrowed' ? libraryBorrowedEntry : libraryEntry).create(urls);
    await runParallel(contestant, 'profile:warmup', 64, 500);
    const key = `profile:${id}`;
    let result: object;
    if (workload.kind === 'serial') {
      const latencies = new Samples();
      const slice = await runSerial(contestant, key, durationMs, latencies);
      result = {
        opsPerSec: (slice.cycles * 1000) / slice.elapsedMs,
        p50Ms: latencies.percentile(0.5),
        p99Ms: latencies.percentile(0.99),
      };
    } else if (workload.kind === 'parallel') {
      const slice = await runParallel(contestant, key, workload.callers, durationMs);
      result = { opsPerSec: (slice.cycles * 1000) / slice.elapsedMs };
    } else {
      const locks = contestant;
      const semaphore = locks.semaphore?.bind(locks);
      const acquire =
        workload.limit > 1 && semaphore
          ? (name: string) => semaphore(name, workload.limit)
          : (name: string) => locks.lock(name);
      const turns = await runTurns(acquire, key, workload.callers, workload.holdMs, workload.limit, durationMs);
      result = {
        opsPerSec: (turns.acquisitions * 1000) / turns.elapsedMs,
        handoverP50Ms: turns.handovers.percentile(0.5),
        longestWaitMs: turns.longestWaitMs,
      };
    }
    process.stdout.write(`${id}: ${JSON.stringify(result)}\n`);
  } finally {
    await contestant?.close();
    await servers.stop();
  }
}

main().catch((error: unknown) => {
  process.stderr.write(`${error instanceof Error ? error.stack : String(error)}\n`);
  process.exitCode = 1;
});
