import { SLICES_PER_ROUND } from '../bench-options';
import { WORKLOADS, type WorkloadSpec } from '../workloads/workload-specs';
import { bestPeer, figures, findCell, type BenchResults, type Metrics } from './results';
import type { TargetOutcome } from './targets';

/** RESULTS.md: every table of the run, the targets, the machine and the command. */
export function markdownReport(results: BenchResults, targets: readonly TargetOutcome[]): string {
  const { options, machine } = results;
  const ran = WORKLOADS.filter((workload) => options.workloads.includes(workload.id));
  const lines: string[] = [
    '# Benchmark results',
    '',
    `Command: \`${results.command}\` — ${results.startedAt}, ${results.totalSeconds.toFixed(0)} s in all.`,
    '',
    `Machine: ${machine.cpus} CPUs (${machine.cpuModel}), ${machine.memoryGb} GB, ${machine.os}; ` +
      `Node ${machine.node}; redis-server ${machine.redis} on loopback, no persistence, one process per server ` +
      `(1 for workloads 1–3, 5 for workload 4). Load average at the start: ${machine.loadAverage.toFixed(2)} ` +
      '(the machine is shared: figures move with what else runs; compare within a run).',
    '',
    `Every figure is the median of ${options.rounds} round(s) of ${options.durationMs / 1000} s per measurement. ` +
      `Within a round, the serial and parallel workloads run in ${SLICES_PER_ROUND} slices per contestant, the contestants taking turns ` +
      'slice by slice; the contended ones run one contestant after another; the order rotates every round. ' +
      'The raw ioredis baseline (SET NX PX + EVALSHA compare-and-delete) is the two-round-trip floor, not a peer: ' +
      'ratios are to the best *peer*.',
    '',
    '![Throughput per workload](throughput.svg)',
    '',
    ...throughputTable(results, ran),
    '',
    ...latencyTable(results, ran),
    '',
    ...contendedTable(results, ran),
    '',
    ...memorySection(results),
    '',
    '## Targets',
    '',
    '| target | measured | verdict |',
    '| --- | --- | --- |',
    ...targets.map((outcome) => `| ${outcome.target} | ${outcome.measured} | ${outcome.met === true ? '✅ ' : outcome.met === false ? '❌ ' : ''}${outcome.verdict} |`),
    '',
    ...methodNotes(),
  ];
  return `${lines.join('\n')}\n`;
}

function throughputTable(results: BenchResults, ran: readonly WorkloadSpec[]): string[] {
  const contestants = results.contestants;
  const lines = [
    `## Throughput (acquire + release per second)`,
    '',
    `| workload | ${contestants.map((contestant) => contestant.label).join(' | ')} | this ÷ best peer |`,
    `| --- | ${contestants.map(() => '---:').join(' | ')} | ---: |`,
  ];
  for (const workload of ran) {
    const cells = contestants.map((contestant) => {
      const cell = findCell(results, workload.id, contestant.id);
      if (cell?.error) return `n/a (${shorten(cell.error)})`;
      if (!cell) return '—';
      const value = figures(results, workload.id, contestant.id)?.opsPerSec;
      return value === undefined ? '—' : formatCount(value);
    });
    const library = figures(results, workload.id, 'library')?.opsPerSec;
    const best = bestPeer(results, workload.id);
    const ratio = library !== undefined && best ? `**${(library / best.opsPerSec).toFixed(2)}×** (${best.contestant.label})` : '—';
    lines.push(`| ${workload.title} | ${cells.join(' | ')} | ${ratio} |`);
  }
  return lines;
}

function latencyTable(results: BenchResults, ran: readonly WorkloadSpec[]): string[] {
  const serial = ran.filter((workload) => workload.kind === 'serial');
  if (serial.length === 0) return [];
  const lines = [
    '## Latency of one acquire + release, serial (ms)',
    '',
    `| contestant | ${serial.map((workload) => `${workload.title} p50 | p99`).join(' | ')} |`,
    `| --- | ${serial.map(() => '---: | ---:').join(' | ')} |`,
  ];
  for (const contestant of results.contestants) {
    const cells = serial.map((workload) => {
      const measured = figures(results, workload.id, contestant.id);
      return measured ? `${measured.p50Ms.toFixed(3)} | ${measured.p99Ms.toFixed(3)}` : '— | —';
    });
    lines.push(`| ${contestant.label} | ${cells.join(' | ')} |`);
  }
  return lines;
}

function contendedTable(results: BenchResults, ran: readonly WorkloadSpec[]): string[] {
  const contended = ran.filter((workload) => workload.kind === 'contended');
  if (contended.length === 0) return [];
  const lines = [
    '## Contended: one key, callers taking turns',
    '',
    'Handover: from a holder calling release() to the next caller holding the lock. Commands per acquisition: ' +
      '*client* = what the clients sent, *all* = every command Redis ran, including those inside Lua scripts. ' +
      '*While waiting*: client commands per waiting caller per second, counted while every other caller waited.',
    '',
    '| workload | contestant | ops/s | handover p50 (ms) | handover p99 (ms) | longest wait (ms) | client cmds / acq. | all cmds / acq. | while waiting (cmds/s per waiter) | client commands per acquisition |',
    '| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |',
  ];
  const costs: string[] = [];
  for (const workload of contended) {
    for (const contestant of results.contestants) {
      const cell = findCell(results, workload.id, contestant.id);
      if (!cell) continue;
      if (cell.error) {
        lines.push(`| ${workload.title} | ${contestant.label} | n/a (${shorten(cell.error)}) | | | | | | | |`);
        continue;
      }
      const m = figures(results, workload.id, contestant.id) as Metrics;
      costs.push(`| ${workload.title} | ${contestant.label} | ${m.allCommandsPerAcquisition.toFixed(2)} | ${commandMix(m, 'all.')} |`);
      const waiting = Number.isNaN(m.waitingCommandsPerWaiterSecond) ? '—' : m.waitingCommandsPerWaiterSecond.toFixed(2);
      lines.push(
        `| ${workload.title} | ${contestant.label} | ${formatCount(m.opsPerSec)} | ${m.handoverP50Ms.toFixed(2)} | ` +
          `${m.handoverP99Ms.toFixed(2)} | ${m.longestWaitMs.toFixed(0)} | ${m.clientCommandsPerAcquisition.toFixed(2)} | ` +
          `${m.allCommandsPerAcquisition.toFixed(2)} | ${waiting} | ${commandMix(m, 'mix.')} |`,
      );
      const overlaps = cell.rounds.reduce((total, round) => total + (round.overlaps ?? 0), 0);
      if (overlaps > 0) lines.push(`| | ⚠ ${overlaps} grant(s) while the key was held | | | | | | | | |`);
    }
  }
  lines.push(
    '',
    'What one acquisition costs Redis, by command (INFO commandstats, scripts\' inner commands included):',
    '',
    '| workload | contestant | all commands | by command |',
    '| --- | --- | ---: | --- |',
    ...costs,
  );
  const runs = results.cells.filter((cell) => contended.some((workload) => workload.id === cell.workload)).flatMap((cell) => cell.rounds);
  const disagreeing = runs.filter((round) => round.countMismatch !== 0).length;
  lines.push(
    '',
    disagreeing === 0
      ? `MONITOR (client + script lines) and INFO commandstats counted the same commands in all ${runs.length} contended runs.`
      : `⚠ MONITOR and INFO commandstats disagreed in ${disagreeing} of ${runs.length} contended runs (see countMismatch in results.json).`,
  );
  return lines;
}

function memorySection(results: BenchResults): string[] {
  const memory = results.memory;
  if (!memory) return ['## Memory', '', `Not measured: ${results.memoryError ?? 'skipped (--memory=0)'}.`];
  return [
    '## Memory',
    '',
    `${memory.cycles.toLocaleString('en-US')} acquire/release cycles of this library on unique keys ` +
      `(${memory.concurrency} concurrent callers, ${(memory.cycles / memory.seconds).toFixed(0)}/s), in a child Node with ` +
      '--expose-gc; heap used after full GCs, read after 50,000 warm-up cycles and again at the end. ' +
      'Peers were not run here: this is a leak check of the library (1M cycles of each peer would double the run time).',
    '',
    '| heap before (MB) | heap after (MB) | growth (MB) |',
    '| ---: | ---: | ---: |',
    `| ${memory.heapBeforeMb.toFixed(2)} | ${memory.heapAfterMb.toFixed(2)} | **${memory.growthMb.toFixed(2)}** |`,
  ];
}

function methodNotes(): string[] {
  return [
    '## How it is measured',
    '',
    '- Contestants: this library through `LockService` of a Nest application context, ' +
      '`LockModule.forRoot({ redis: url, ttl: 10000, wait, autoExtend: true })` (the module owns its client; ' +
      '`nodes: [5 urls]` for workload 4); redlock `Redlock.acquire([key], 10000)` / `release()` ' +
      '(retryCount raised to 100000, default retryDelay 200 ms and jitter 100 ms); redis-semaphore `Mutex` / ' +
      '`RedlockMutex` (lockTimeout 10000, acquireTimeout raised, default 10 ms retry interval); each peer on plain ' +
      '`new Redis(url)` clients, as documented.',
    '- Serial: one caller, one key, acquire + release in a loop. Parallel64: 64 callers, each on its own key. ' +
      'Throughput counts every finished cycle until the last caller stops.',
    '- Contended: all callers on one key; each holds it for the critical section (a timer of 1 or 20 ms), then ' +
      'releases and asks again at once. The raw baseline cannot wait and sits these out.',
    '- Commands: `CONFIG RESETSTAT` before each contended run, `INFO commandstats` after it gives *all* commands ' +
      '(Redis counts the commands a script runs under their own names). A `MONITOR` connection during the run tags ' +
      'every command with its source, a client address or `lua`: *client* commands are the lines not from `lua`. ' +
      'The harness\'s own commands (INFO, CONFIG, MONITOR, ECHO marker, connection handshakes) are left out; ' +
      'MONITOR\'s client + script lines are checked against the commandstats total.',
    '- While waiting (16 × 20 ms): client commands whose MONITOR timestamp falls between 5 ms after a grant and 1 ms ' +
      'before that holder\'s release — a span where the 15 other callers are all waiting — per waiter per second.',
  ];
}

/** The `prefix`-named metrics as "evalsha 3.00, subscribe 0.01", largest first. */
function commandMix(metrics: Metrics, prefix: string): string {
  return Object.entries(metrics)
    .filter(([name, value]) => name.startsWith(prefix) && value >= 0.005)
    .sort(([, a], [, b]) => b - a)
    .map(([name, value]) => `${name.slice(prefix.length)} ${value.toFixed(2)}`)
    .join(', ');
}

export function formatCount(value: number): string {
  return value >= 100 ? Math.round(value).toLocaleString('en-US') : value.toFixed(1);
}

function shorten(text: string): string {
  const line = text.split('\n')[0];
  return line.length > 80 ? `${line.slice(0, 77)}...` : line;
}
