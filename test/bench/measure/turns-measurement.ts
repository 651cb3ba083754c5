import type { Contestant } from '../contestants';
import { CostMeter, type Cost } from '../metering/cost-meter';
import type { ScriptCensus } from '../metering/script-census';
import type { Metrics } from '../report/results';
import { commandsPerWaiterSecond, runTurns, type TurnsResult } from '../workloads/turns.workload';
import type { WorkloadSpec } from '../workloads/workload-specs';

/**
 * One measurement of a turns workload (contended, hot key, semaphore) for one contestant, as flat metrics:
 * the timing from the workload, and Redis' cost of the same window from the cost meter. Per-command
 * figures are per acquisition; mixes are named `mix.<command>` (client-sent), `all.<command>` (every
 * command Redis ran) and `script.<signature>` (EVAL/EVALSHA calls by what the script does).
 */
export async function measureTurns(
  workload: WorkloadSpec,
  contestant: Contestant,
  port: number,
  key: string,
  durationMs: number,
  census: ScriptCensus,
): Promise<Metrics> {
  const semaphore = contestant.semaphore?.bind(contestant);
  if (workload.limit > 1 && !semaphore) throw new Error('no semaphore');
  const acquire =
    workload.limit > 1 && semaphore
      ? (name: string) => semaphore(name, workload.limit)
      : (name: string) => contestant.lock(name);
  // Send times are only needed for the waiting windows (a critical section of 10 ms or more).
  const meter = await CostMeter.start([port], { timestamps: workload.holdMs >= 10 });
  let result: TurnsResult;
  let cost: Cost;
  try {
    result = await runTurns(acquire, key, workload.callers, workload.holdMs, workload.limit, durationMs);
  } finally {
    // Closed whatever happened: an open count would refuse the next measurement.
    cost = await meter.stop();
  }
  return toMetrics(workload, result, cost, census);
}

function toMetrics(workload: WorkloadSpec, result: TurnsResult, cost: Cost, census: ScriptCensus): Metrics {
  const perAcquisition = (count: number): number => count / result.acquisitions;
  let acquireScripts = 0;
  let unclassifiedScripts = 0;
  const metrics: Metrics = {
    opsPerSec: (result.acquisitions * 1000) / result.elapsedMs,
    acquisitions: result.acquisitions,
    handoverP50Ms: result.handovers.percentile(0.5),
    handoverP99Ms: result.handovers.percentile(0.99),
    longestWaitMs: result.longestWaitMs,
    overlaps: result.overlaps,
    maxHolders: result.maxHolders,
    clientCommandsPerAcquisition: perAcquisition(cost.client.total),
    allCommandsPerAcquisition: perAcquisition(cost.server.total),
    redisCpuUsPerAcquisition: perAcquisition(cost.server.cpuSeconds * 1e6),
    waitingCommandsPerWaiterSecond: commandsPerWaiterSecond(cost.client.sentAtMs, result.windows, workload.callers - 1),
    clientServerMismatch: cost.clientServerMismatch,
  };
  for (const [name, count] of Object.entries(cost.client.byName)) metrics[`mix.${name}`] = perAcquisition(count);
  for (const [name, count] of Object.entries(cost.server.calls)) metrics[`all.${name}`] = perAcquisition(count);
  for (const [sha, calls] of Object.entries(cost.client.scriptCalls)) {
    const script = census.scripts.get(sha);
    if (script?.acquires) acquireScripts += calls;
    if (!script) unclassifiedScripts += calls;
    const label = `script.[${script ? script.signature : `unclassified ${sha.slice(0, 8)}`}]`;
    metrics[label] = (metrics[label] ?? 0) + perAcquisition(calls);
  }
  metrics.acquireScriptsPerAcquisition = perAcquisition(acquireScripts);
  metrics.unclassifiedScriptsPerAcquisition = perAcquisition(unclassifiedScripts);
  return metrics;
}
