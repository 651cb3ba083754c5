import { SLICES_PER_ROUND } from '../bench-options';
import { WORKLOADS, type WorkloadSpec } from '../workloads/workload-specs';
import {
  bestPeer,
  bestPeerBy,
  figures,
  findCell,
  ours,
  oursVersusBestPeer,
  clientKind,
  TARGET_CONTESTANTS,
  UNCOUNTED_CLIENT_SIDE,
  type BenchResults,
  type Metrics,
} from './results';
import type { TargetOutcome } from './targets';

/** RESULTS.md: every table of the run, the targets, the machine and the command. */
export function markdownReport(results: BenchResults, targets: readonly TargetOutcome[]): string {
  const ran = WORKLOADS.filter((workload) => results.options.workloads.includes(workload.id));
  const lines: string[] = [
    '# Benchmark results',
    '',
    `Command: \`${results.command}\` — ${results.startedAt}, ${results.totalSeconds.toFixed(0)} s in all.`,
    '',
    machineLine(results),
    '',
    `Every figure is the median of ${results.options.rounds} round(s) of ${results.options.durationMs / 1000} s per measurement. ` +
      `Within a round, the serial and parallel workloads run in ${SLICES_PER_ROUND} slices per contestant, the contestants taking turns ` +
      'slice by slice; the workloads on one key (contended, hot key, semaphore) run one contestant after another; the order rotates every round. ' +
      'This library runs over a client the module makes from a URL (*owned*), over a plain `new Redis(url)` the user ' +
      "passes in (*borrowed*, the library's own ioredis), over the same from an application's own copy of ioredis 5 and of " +
      "ioredis 6 (*app's ioredis 5 / 6*, installed in test/matrix/lent-clients), and over a node-redis 5 client; for ours, " +
      'the worse of the ioredis ones counts. ' +
      'The raw ioredis baseline (SET NX PX + EVALSHA compare-and-delete) is the two-round-trip floor, not a peer: ' +
      'ratios are to the best *peer*.',
    '',
    '![Throughput per workload](throughput.svg)',
    '',
    ...throughputTable(results, ran),
    '',
    ...semaphoreSection(results, ran),
    '',
    ...latencyTable(results, ran),
    '',
    ...turnsTables(results, ran),
    '',
    ...censusSection(results),
    '',
    ...memorySection(results),
    '',
    '## Targets',
    '',
    'Ratios to the best peer of each workload; for ours, the worse of the owned and the borrowed ioredis clients counts.',
    '',
    '| target | measured | verdict |',
    '| --- | --- | --- |',
    ...targets.map(
      (outcome) =>
        `| ${outcome.target} | ${outcome.measured} | ${outcome.met === true ? '✅ ' : outcome.met === false ? '❌ ' : ''}${outcome.verdict} |`,
    ),
    '',
    ...methodNotes(),
  ];
  return `${lines.join('\n')}\n`;
}

/** The machine the run was on, in one line (README quotes it). */
export function machineLine(results: BenchResults): string {
  const { machine } = results;
  return (
    `Machine: ${machine.cpus} CPUs (${machine.cpuModel}), ${machine.memoryGb} GB, ${machine.os}; ` +
    `Node ${machine.node}; redis-server ${machine.redis} on loopback, no persistence, one process per server ` +
    `(1 for workloads 1–3, 5 for workload 4). Load average at the start: ${machine.loadAverage.toFixed(2)} ` +
    '(the machine is shared: figures move with what else runs; compare within a run).'
  );
}

function throughputTable(results: BenchResults, ran: readonly WorkloadSpec[]): string[] {
  const contestants = results.contestants;
  const mine = ours(results);
  // This library over other client families (node-redis): a ratio of their own, not judged by the targets.
  const others = contestants.filter(
    (contestant) => contestant.role === 'library' && !TARGET_CONTESTANTS.includes(contestant.id),
  );
  const ratioColumns = [...mine, ...others].map((contestant) => `${kind(contestant.id)} ÷ best peer`);
  const lines = [
    '## Throughput (acquisitions per second, each released at once or after its critical section)',
    '',
    `| workload | ${contestants.map((contestant) => contestant.label).join(' | ')} | ${ratioColumns.join(' | ')} | best peer |`,
    `| --- | ${contestants.map(() => '---:').join(' | ')} | ${ratioColumns.map(() => '---:').join(' | ')} | --- |`,
  ];
  for (const workload of ran) {
    const cells = contestants.map((contestant) => {
      const cell = findCell(results, workload.id, contestant.id);
      if (cell?.error) return `n/a (${shorten(cell.error)})`;
      if (cell?.skipped) return workload.only ? '—' : `*${cell.skipped}*`;
      const value = figures(results, workload.id, contestant.id)?.opsPerSec;
      return value === undefined ? '—' : formatCount(value);
    });
    const versus = oursVersusBestPeer(results, workload.id);
    const ratios = mine.map((contestant) => {
      const ratio = versus?.each.find((item) => item.contestant.id === contestant.id)?.ratio;
      if (ratio === undefined) return '—';
      // The worse of ours is the one that counts: bold.
      return ratio === versus?.worse && (versus?.each.length ?? 0) > 1
        ? `**${ratio.toFixed(2)}×**`
        : `${ratio.toFixed(2)}×`;
    });
    const peer = bestPeer(results, workload.id);
    for (const contestant of others) {
      const value = figures(results, workload.id, contestant.id)?.opsPerSec;
      ratios.push(value === undefined || !peer ? '—' : `${(value / peer.opsPerSec).toFixed(2)}×`);
    }
    lines.push(
      `| ${workload.title} | ${cells.join(' | ')} | ${ratios.join(' | ')} | ${versus?.peer.label ?? peer?.contestant.label ?? '—'} |`,
    );
  }
  const limited = ran.filter((workload) => workload.only && workload.onlyWhy);
  if (limited.length > 0) lines.push('', ...limited.map((workload) => `${workload.title}: ${workload.onlyWhy}.`));
  return lines;
}

const SEMAPHORE_WORKLOAD = 'semaphore-4of16x1ms';
const SEMAPHORE_PEER = 'redis-semaphore';

/** Issue 15's figure: this library's semaphore against redis-semaphore's `Semaphore`, named, with the ratio. */
function semaphoreSection(results: BenchResults, ran: readonly WorkloadSpec[]): string[] {
  const workload = ran.find((candidate) => candidate.id === SEMAPHORE_WORKLOAD);
  if (!workload) return [];
  const peer = results.contestants.find((contestant) => contestant.id === SEMAPHORE_PEER);
  const peerFigures = figures(results, workload.id, SEMAPHORE_PEER);
  const lines = [
    `## Semaphore (issue 15): limit ${workload.limit}, ${workload.callers} callers, ${workload.holdMs} ms held, vs redis-semaphore`,
    '',
    '| contestant | acq./s | ÷ redis-semaphore | Redis CPU µs / acq. | client cmds / acq. | most holders at once | grants over the limit |',
    '| --- | ---: | ---: | ---: | ---: | ---: | ---: |',
  ];
  for (const contestant of [...ours(results), ...(peer ? [peer] : [])]) {
    const cell = findCell(results, workload.id, contestant.id);
    const m = figures(results, workload.id, contestant.id);
    if (!m) {
      lines.push(
        `| ${contestant.label} | ${cell?.error ? `n/a (${shorten(cell.error)})` : cell?.skipped ? `*${cell.skipped}*` : '—'} | | | | | |`,
      );
      continue;
    }
    const ratio =
      peerFigures && contestant.id !== SEMAPHORE_PEER ? `${(m.opsPerSec / peerFigures.opsPerSec).toFixed(2)}×` : '—';
    const overLimit = cell?.rounds.reduce((total, round) => total + (round.overlaps ?? 0), 0) ?? 0;
    const mostHolders = Math.max(...(cell?.rounds.map((round) => round.maxHolders ?? 0) ?? [0]));
    lines.push(
      `| ${contestant.label} | ${formatCount(m.opsPerSec)} | ${ratio} | ${m.redisCpuUsPerAcquisition.toFixed(1)} | ` +
        `${m.clientCommandsPerAcquisition.toFixed(2)} | ${mostHolders} | ${overLimit} |`,
    );
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

function turnsTables(results: BenchResults, ran: readonly WorkloadSpec[]): string[] {
  const turns = ran.filter((workload) => workload.kind === 'turns');
  if (turns.length === 0) return [];
  const lines = [
    '## One key, callers taking turns: what an acquisition costs Redis',
    '',
    '*Redis CPU*: used_cpu_sys + used_cpu_user of the redis-server (INFO cpu) over the measured window, per acquisition; ' +
      '*÷ best peer*: that CPU ÷ the lowest of the peers (lower is better). *All cmds*: every command Redis ran (INFO commandstats ' +
      'deltas, the commands inside Lua scripts included, all commands summed). *Client cmds*: what the clients sent. ' +
      '*Acquire scripts*: EVALSHA/EVAL calls of scripts that grant, i.e. run `SET … NX` or hand a key over with `SET … XX` (see the script census), ours only. ' +
      '*Handover*: from a holder calling release() to the next caller holding the lock. *While waiting*: client commands ' +
      'per waiting caller per second, counted while every other caller waited (20 ms critical sections only).',
    '',
    '| workload | contestant | acq./s | Redis CPU µs / acq. | ÷ best peer | all cmds / acq. | client cmds / acq. | acquire scripts / acq. | handover p50 (ms) | handover p99 (ms) | longest wait (ms) | while waiting (cmds/s per waiter) |',
    '| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |',
  ];
  const mixes: string[] = [];
  const notes: string[] = [];
  for (const workload of turns) {
    const lowestCpu = bestPeerBy(results, workload.id, 'redisCpuUsPerAcquisition', 'lowest');
    for (const contestant of results.contestants) {
      const cell = findCell(results, workload.id, contestant.id);
      if (!cell) continue;
      if (cell.error || cell.skipped) {
        if (cell.skipped && workload.only) continue;
        lines.push(
          `| ${workload.title} | ${contestant.label} | ${cell.error ? `n/a (${shorten(cell.error)})` : `*${cell.skipped}*`} | | | | | | | | | |`,
        );
        continue;
      }
      const m = figures(results, workload.id, contestant.id);
      if (!m) continue;
      const cpuRatio = lowestCpu ? `${(m.redisCpuUsPerAcquisition / lowestCpu.value).toFixed(2)}×` : '—';
      const counted = !UNCOUNTED_CLIENT_SIDE.includes(contestant.id);
      // Acquire scripts are those running SET … NX: a lock's. A permit is taken otherwise (a sorted set).
      const acquireScripts =
        contestant.role === 'library' && counted && workload.limit === 1
          ? m.acquireScriptsPerAcquisition.toFixed(2)
          : '—';
      const clientCommands = counted ? m.clientCommandsPerAcquisition.toFixed(2) : '—';
      const whileWaiting = counted ? fixed(m.waitingCommandsPerWaiterSecond, 2) : '—';
      lines.push(
        `| ${workload.title} | ${contestant.label} | ${formatCount(m.opsPerSec)} | ${m.redisCpuUsPerAcquisition.toFixed(1)} | ${cpuRatio} | ` +
          `${m.allCommandsPerAcquisition.toFixed(2)} | ${clientCommands} | ${acquireScripts} | ` +
          `${fixed(m.handoverP50Ms, 2)} | ${fixed(m.handoverP99Ms, 2)} | ${m.longestWaitMs.toFixed(0)} | ${whileWaiting} |`,
      );
      mixes.push(
        `| ${workload.title} | ${contestant.label} | ${commandMix(m, 'mix.')} | ${commandMix(m, 'script.')} | ${commandMix(m, 'all.')} |`,
      );
      const overlaps = cell.rounds.reduce((total, round) => total + (round.overlaps ?? 0), 0);
      if (overlaps > 0)
        notes.push(
          `⚠ ${workload.title}, ${contestant.label}: ${overlaps} grant(s) while ${workload.limit} caller(s) already held the key.`,
        );
      if (m.unclassifiedScriptsPerAcquisition > 0) {
        notes.push(
          `⚠ ${workload.title}, ${contestant.label}: ${m.unclassifiedScriptsPerAcquisition.toFixed(2)} calls per acquisition of scripts the census never saw (not counted as acquire scripts).`,
        );
      }
    }
  }
  const runs = results.cells
    .filter(
      (cell) =>
        turns.some((workload) => workload.id === cell.workload) && !UNCOUNTED_CLIENT_SIDE.includes(cell.contestant),
    )
    .flatMap((cell) => cell.rounds);
  if (results.contestants.some((contestant) => UNCOUNTED_CLIENT_SIDE.includes(contestant.id))) {
    notes.push(
      'Client-side counts (client cmds, acquire scripts, while waiting) hook ioredis: the node-redis row has server-side figures only.',
    );
  }
  const disagreeing = runs.filter((round) => round.clientServerMismatch !== 0).length;
  notes.push(
    disagreeing === 0
      ? `In all ${runs.length} runs, the client-side count and INFO commandstats agreed on every command a script cannot run (EVAL/EVALSHA, (UN)SUBSCRIBE, MULTI/EXEC).`
      : `⚠ In ${disagreeing} of ${runs.length} runs, the client-side count and INFO commandstats disagreed on commands a script cannot run (see clientServerMismatch in results.json).`,
  );
  lines.push(
    '',
    ...notes,
    '',
    'What an acquisition is made of, per acquisition (client-sent commands; script calls by what the script runs inside; every command Redis ran):',
    '',
    '| workload | contestant | client commands | scripts called | all commands (commandstats) |',
    '| --- | --- | --- | --- | --- |',
    ...mixes,
  );
  return lines;
}

function censusSection(results: BenchResults): string[] {
  const census = results.census;
  if (!census) return [];
  const labelOf = (id: string): string => results.contestants.find((contestant) => contestant.id === id)?.label ?? id;
  const disagreeing = census.checks.filter((check) => check.disagreements.length > 0 || check.orphanScriptLines > 0);
  return [
    '## Script census',
    '',
    'Before the rounds, each contestant ran a little of every workload (100 ms serial, 250 ms hot key at 8 callers, and its ' +
      'semaphore if it has one) under MONITOR, which shows each command a Lua script runs next to the EVAL/EVALSHA that ran it. ' +
      'That names every script by what it runs inside Redis; a script that runs `SET … NX` (or hands a held key over, `SET … XX`) is an acquire script.',
    '',
    '| script (SHA1) | runs inside Redis | acquire script | called by |',
    '| --- | --- | --- | --- |',
    ...census.scripts.map(
      (script) =>
        `| \`${script.sha.slice(0, 12)}\` | ${script.signature} | ${script.acquires ? 'yes' : 'no'} | ${script.callers.map(labelOf).join('; ')} |`,
    ),
    '',
    disagreeing.length === 0
      ? `The client-side command count agreed with MONITOR's client lines, command by command, for all ${census.checks.length} contestants.`
      : `⚠ The client-side count disagreed with MONITOR for: ${disagreeing
          .map(
            (check) =>
              `${labelOf(check.contestant)} (${[...check.disagreements, `${check.orphanScriptLines} orphan script lines`].join('; ')})`,
          )
          .join('; ')}.`,
  ];
}

function memorySection(results: BenchResults): string[] {
  const memory = results.memory;
  if (!memory) return ['## Memory', '', `Not measured: ${results.memoryError ?? 'skipped (--memory=0)'}.`];
  return [
    '## Memory',
    '',
    `${memory.cycles.toLocaleString('en-US')} acquire/release cycles of this library (module-owned client) on unique keys ` +
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
      '`LockModule.forRoot({ redis, ttl: 10000, wait, autoExtend: true })`: *owned*, `redis: url` (the module makes and closes ' +
      'its client; `nodes: [5 urls]` for workload 4), and *borrowed*, `redis: new Redis(url)` (`nodes: [5 clients]`), a plain client ' +
      "the module uses but never closes, of the library's own ioredis, and the same of an application's own copy of ioredis 5 and 6 " +
      "(*app's ioredis 5 / 6*, test/matrix/lent-clients); redlock `Redlock.acquire([key], 10000)` / `release()` " +
      '(retryCount raised to 100000, default retryDelay 200 ms and jitter 100 ms); redis-semaphore `Mutex` / ' +
      '`RedlockMutex` and `Semaphore` (lockTimeout 10000, acquireTimeout raised, default 10 ms retry interval); each peer on plain ' +
      '`new Redis(url)` clients, as documented.',
    '- Serial: one caller, one key, acquire + release in a loop. Parallel64: 64 callers, each on its own key. ' +
      'Throughput counts every finished cycle until the last caller stops.',
    '- One key, callers taking turns, all in this process: *contended*, each caller holds the key for a timer of 1 or 20 ms, ' +
      'then releases and asks again at once; *hot key*, nothing held: release is called as soon as acquire resolves, with no await ' +
      "in between; *semaphore*, 16 callers on 4 slots, 1 ms held: `acquire(key, { limit: 4 })` for this library, redis-semaphore's " +
      '`Semaphore` for the peer (redlock has none and sits it out). ' +
      'Callers stop once the duration has passed; those still waiting get their turn first. The raw baseline cannot wait and sits these out.',
    '- Redis CPU: `INFO cpu` of the redis-server before and after the window, `used_cpu_sys + used_cpu_user` (the whole process) ' +
      'delta ÷ acquisitions. The window is the workload plus 50 ms for late commands (an UNSUBSCRIBE after the last caller); ' +
      'no MONITOR runs in it (MONITOR would cost Redis CPU per command).',
    "- All commands: `INFO commandstats` read in the same INFO as the CPU, before and after; the delta of every command's " +
      '`calls` summed. Redis counts the commands a script runs under their own names (an EVALSHA that runs SET and INCR counts 3). ' +
      "The harness's own (INFO, CONFIG, MONITOR, ECHO) and connection handshakes (CLIENT, HELLO, SELECT, PING) are left out.",
    "- Client commands: counted in this process as ioredis writes them to the server's socket (the ioredis installed, and the " +
      "application's copies of ioredis 5 and 6, each hooked), by name and, for EVAL/EVALSHA, by script SHA1. Every run checks the count against commandstats for the commands " +
      'a script cannot run; the census checks it against MONITOR for every command.',
    '- Acquire scripts: client EVAL/EVALSHA calls of the scripts the census classified as acquire scripts (they run `SET … NX`, `SET … XX` to hand a key over, or `ZADD` with `HSET` to add a permit holder), ' +
      '÷ acquisitions. Classification by what a script does in Redis, not by its name or source in lib/, so the count stays right ' +
      "while the engine's scripts change.",
    "- While waiting (16 × 20 ms): client commands sent between 5 ms after a grant and 1 ms before that holder's release — a span " +
      'where the 15 other callers are all waiting — per waiter per second.',
  ];
}

/** The `prefix`-named metrics as "evalsha 3.00, subscribe 0.01", largest first. */
function commandMix(metrics: Metrics, prefix: string): string {
  return Object.entries(metrics)
    .filter(([name, value]) => name.startsWith(prefix) && value >= 0.005)
    .sort(([, a], [, b]) => b - a)
    .map(([name, value]) => `${name.slice(prefix.length)} ${value.toFixed(2)}`)
    .join('; ');
}

function kind(id: string): string {
  return id === 'library-node-redis' ? 'node-redis' : clientKind(id);
}

function fixed(value: number | undefined, digits: number): string {
  return value === undefined || Number.isNaN(value) ? '—' : value.toFixed(digits);
}

export function formatCount(value: number): string {
  return value >= 100 ? Math.round(value).toLocaleString('en-US') : value.toFixed(1);
}

function shorten(text: string): string {
  const line = text.split('\n')[0];
  return line.length > 80 ? `${line.slice(0, 77)}...` : line;
}
