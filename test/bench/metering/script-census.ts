import type { Contestant, ContestantEntry } from '../contestants';
import { Samples } from '../stats';
import { runSerial } from '../workloads/serial.workload';
import { runTurns } from '../workloads/turns.workload';
import { startClientCount, stopClientCount } from './client-command-counter';
import { MonitorRecorder } from './monitor-recorder';

/** A Lua script a contestant ran, named by what it does inside Redis. */
export interface ScriptInfo {
  readonly sha: string;
  /** Its inner commands, most frequent first, e.g. "set nx, incr, pttl" ("none seen" for a script that ran nothing). */
  readonly signature: string;
  /**
   * True when it runs `SET … NX` (takes a free key), `SET … XX` (hands a held key over), or `ZADD` with `HSET` (adds
   * a permit's holder and records it): it grants.
   */
  readonly acquires: boolean;
  /** Contestants seen calling it. */
  readonly callers: readonly string[];
}

/** What the census found for one contestant. */
export interface CensusCheck {
  readonly contestant: string;
  /** Client-sent commands counted by MONITOR in the census run. */
  readonly monitorClientCommands: number;
  /** Commands whose client-side count differed from MONITOR's, e.g. "evalsha 120 vs 121"; empty when none. */
  readonly disagreements: readonly string[];
  /** MONITOR lines from scripts that could not be tied to a script call. */
  readonly orphanScriptLines: number;
}

export interface ScriptCensus {
  readonly scripts: ReadonlyMap<string, ScriptInfo>;
  readonly checks: readonly CensusCheck[];
}

/** Length of each census run: enough for a few hundred acquisitions, short enough to add ~1 s in all. */
const SERIAL_MS = 100;
const HOT_KEY_MS = 250;
const HOT_KEY_CALLERS = 8;
const SEMAPHORE_MS = 150;

/**
 * Learns, once and unmeasured, which Lua scripts each contestant runs and what each does, by running a
 * little of every kind of workload under MONITOR: MONITOR shows every command a script runs right next to
 * the EVAL/EVALSHA that ran it (see monitor-recorder.ts). A script that runs `SET … NX` (or `SET … XX`, a hand-over;
 * or `ZADD` with `HSET`, a permit) is an acquire script; the measured runs then count acquire-script calls per acquisition from the client-side count of
 * EVALSHA/EVAL by SHA, which needs no MONITOR. Classifying by what a script does in Redis, not by its source
 * or name in lib/, keeps the count right while the engine's scripts change.
 *
 * The same runs check the client-side counter: it must count exactly the client commands MONITOR saw.
 */
export async function runScriptCensus(
  lineup: ReadonlyArray<readonly [ContestantEntry, Contestant]>,
  port: number,
  log: (message: string) => void,
): Promise<ScriptCensus> {
  const scripts = new Map<string, { inner: Map<string, number>; callers: Set<string> }>();
  const checks: CensusCheck[] = [];
  for (const [entry, contestant] of lineup) {
    const recorder = await MonitorRecorder.start(port);
    startClientCount([port]);
    try {
      const key = `bench:census:${entry.id}`;
      await runSerial(contestant, `${key}:serial`, SERIAL_MS, new Samples());
      if (entry.waits) await runTurns((name) => contestant.lock(name), `${key}:hot`, HOT_KEY_CALLERS, 0, 1, HOT_KEY_MS);
      const semaphore = contestant.semaphore?.bind(contestant);
      if (entry.waits && semaphore)
        await runTurns((name) => semaphore(name, 4), `${key}:semaphore`, 16, 1, 4, SEMAPHORE_MS);
    } finally {
      const client = stopClientCount();
      const recording = await recorder.stop();
      const disagreements: string[] = [];
      for (const name of new Set([...Object.keys(client.byName), ...Object.keys(recording.clientByName)])) {
        const ours = client.byName[name] ?? 0;
        const monitor = recording.clientByName[name] ?? 0;
        if (ours !== monitor) disagreements.push(`${name} ${ours} counted vs ${monitor} in MONITOR`);
      }
      for (const [sha, seen] of Object.entries(recording.scripts)) {
        let script = scripts.get(sha);
        if (!script) scripts.set(sha, (script = { inner: new Map(), callers: new Set() }));
        script.callers.add(entry.id);
        for (const [command, count] of Object.entries(seen.inner))
          script.inner.set(command, (script.inner.get(command) ?? 0) + count);
      }
      const monitorClientCommands = Object.values(recording.clientByName).reduce((sum, count) => sum + count, 0);
      checks.push({
        contestant: entry.id,
        monitorClientCommands,
        disagreements,
        orphanScriptLines: recording.orphanScriptLines,
      });
      log(
        `  census ${entry.label}: ${Object.keys(recording.scripts).length} script(s); client-side count ` +
          (disagreements.length === 0
            ? `agrees with MONITOR (${monitorClientCommands} commands)`
            : `DISAGREES: ${disagreements.join('; ')}`),
      );
    }
  }
  const infos = new Map<string, ScriptInfo>();
  for (const [sha, script] of scripts) {
    const ordered = [...script.inner].sort(([, a], [, b]) => b - a).map(([command]) => command);
    infos.set(sha, {
      sha,
      signature: ordered.length > 0 ? ordered.join(', ') : 'none seen',
      // `set xx`: a release that hands the key straight to the next holder (a grant, too).
      acquires:
        script.inner.has('set nx') ||
        script.inner.has('set xx') ||
        (script.inner.has('zadd') && script.inner.has('hset')),
      callers: [...script.callers],
    });
  }
  return { scripts: infos, checks };
}
