/**
 * Runs one workload against this library alone, on a redis-server of its own, for profiling:
 *
 *   node --cpu-prof --cpu-prof-dir=/tmp/lock-prof -r ts-node/register/transpile-only \
 *     test/bench/profile/profile-workload.ts <serial|parallel64|contended-8x1ms|redlock5-serial|redlock5-parallel64> [seconds]
 *   npx ts-node --transpile-only test/bench/profile/summarize-cpu-profile.ts /tmp/lock-prof/<file>.cpuprofile
 *
 * The servers are started before and stopped after the measured part, so the profile is mostly the workload.
 */
import { startBenchServers } from '../bench-servers';
import { libraryEntry, type Contestant } from '../contestants';
import { runContended } from '../workloads/contended.workload';
import { runParallel } from '../workloads/parallel.workload';
import { runSerial } from '../workloads/serial.workload';
import { WORKLOADS } from '../workloads/workload-specs';
import { Samples } from '../stats';

async function main(): Promise<void> {
  const [id = 'serial', secondsArg = '5'] = process.argv.slice(2);
  const workload = WORKLOADS.find((candidate) => candidate.id === id);
  if (!workload) throw new Error(`unknown workload ${id}; one of ${WORKLOADS.map((candidate) => candidate.id).join(', ')}`);
  const durationMs = Number(secondsArg) * 1000;
  const servers = await startBenchServers();
  let contestant: Contestant | undefined;
  try {
    const urls = workload.topology === 'single' ? [servers.single.url] : servers.five.map((server) => server.url);
    contestant = await libraryEntry.create(urls);
    await runParallel(contestant, 'profile:warmup', 64, 500);
    const key = `profile:${id}`;
    let result: object;
    if (workload.kind === 'serial') {
      const latencies = new Samples();
      const slice = await runSerial(contestant, key, durationMs, latencies);
      result = { opsPerSec: (slice.cycles * 1000) / slice.elapsedMs, p50Ms: latencies.percentile(0.5), p99Ms: latencies.percentile(0.99) };
    } else if (workload.kind === 'parallel') {
      const slice = await runParallel(contestant, key, workload.callers, durationMs);
      result = { opsPerSec: (slice.cycles * 1000) / slice.elapsedMs };
    } else {
      result = await runContended(contestant, servers.single.url, key, workload.callers, workload.holdMs, durationMs);
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
