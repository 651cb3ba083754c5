import { createHash, randomUUID } from 'node:crypto';
import Redis from 'ioredis';
import { sendCommand } from '../../support/resp-client';
import { sleep } from '../clock';
import { isHarnessCommand } from './harness-commands';

/** What MONITOR saw: the commands clients sent, and what each script ran inside. */
export interface MonitorRecording {
  /** Client-sent commands (MONITOR source not "lua") by lower-case name. */
  readonly clientByName: Readonly<Record<string, number>>;
  /** Per script SHA1: how often it was called, and its inner commands (see `describe`) with their counts. */
  readonly scripts: Readonly<
    Record<string, { readonly calls: number; readonly inner: Readonly<Record<string, number>> }>
  >;
  /** Lines from "lua" that could not be tied to a script call (should be 0). */
  readonly orphanScriptLines: number;
}

interface ScriptTally {
  calls: number;
  readonly inner: Map<string, number>;
}

/**
 * Records what one server runs through MONITOR, tying every command a Lua script runs to the EVAL/EVALSHA
 * that ran it. Redis runs a script to completion before any other command, so its inner lines are
 * contiguous and next to the script's own line; whether before or after it depends on the version (7.0
 * logs EVAL first, then its inner commands). A probe script run at start() tells which.
 *
 * Only the script census uses it (a short, unmeasured run): MONITOR costs Redis and this process too much
 * for measured runs (see client-command-counter.ts).
 */
export class MonitorRecorder {
  private readonly clientByName = new Map<string, number>();
  private readonly scripts = new Map<string, ScriptTally>();
  private orphanScriptLines = 0;
  /** Inner lines not yet tied to a script: when they come before the script's own line, they wait for it. */
  private pendingInner: string[] = [];
  /** When inner lines follow the script's own line: the script whose inner lines are arriving. */
  private currentSha: string | undefined;
  /** Whether a script's inner lines come before its own line (decided by the probe). */
  private innerBeforeScript: boolean | undefined;
  private readonly probeKey = `bench:monitor-probe:${randomUUID()}`;
  private marker: string | undefined;
  private ended = false;
  private markerSeen: (() => void) | undefined;
  private probeSeen: (() => void) | undefined;
  private probeInnerSeen = false;
  private probeScriptSeen = false;

  private constructor(
    private readonly port: number,
    private readonly monitor: Redis,
  ) {
    monitor.on('monitor', (_time: string, args: string[], source: string) => this.line(args, source));
  }

  static async start(port: number): Promise<MonitorRecorder> {
    const monitor = await new Redis(port, '127.0.0.1', { lazyConnect: true }).monitor();
    const recorder = new MonitorRecorder(port, monitor);
    // The probe: a script whose only inner command names a key nobody else uses. Where its inner line
    // lands relative to its EVAL line fixes the order for the rest of the recording.
    const probed = new Promise<void>((resolve) => (recorder.probeSeen = resolve));
    await sendCommand(port, ['EVAL', `return redis.call('EXISTS', KEYS[1])`, '1', recorder.probeKey]);
    await Promise.race([probed, sleep(2_000)]);
    if (recorder.innerBeforeScript === undefined) throw new Error('MONITOR did not report the probe script');
    return recorder;
  }

  /** Stops recording; everything Redis ran before this call is included. */
  async stop(): Promise<MonitorRecording> {
    // The end marker is the last line of interest: once MONITOR delivered it, it delivered all before it.
    this.marker = `bench-end-${randomUUID()}`;
    const seen = new Promise<void>((resolve) => (this.markerSeen = resolve));
    await sendCommand(this.port, ['ECHO', this.marker]);
    await Promise.race([seen, sleep(2_000)]);
    this.monitor.disconnect();
    this.orphanScriptLines += this.pendingInner.length;
    const scripts: Record<string, { calls: number; inner: Record<string, number> }> = {};
    for (const [sha, tally] of this.scripts)
      scripts[sha] = { calls: tally.calls, inner: Object.fromEntries(tally.inner) };
    return { clientByName: Object.fromEntries(this.clientByName), scripts, orphanScriptLines: this.orphanScriptLines };
  }

  private line(args: string[], source: string): void {
    if (this.ended) return;
    const name = (args[0] ?? '').toLowerCase();
    if (this.innerBeforeScript === undefined) {
      this.detectOrder(name, args, source);
      return;
    }
    if (this.marker !== undefined && name === 'echo' && args[1] === this.marker) {
      this.ended = true;
      this.markerSeen?.();
      return;
    }
    if (source === 'lua') {
      const described = describe(args);
      if (this.innerBeforeScript) this.pendingInner.push(described);
      else if (this.currentSha !== undefined) addInner(this.tally(this.currentSha), described);
      else this.orphanScriptLines++;
      return;
    }
    if (isHarnessCommand(name)) return;
    this.clientByName.set(name, (this.clientByName.get(name) ?? 0) + 1);
    const sha = scriptSha(name, args);
    if (this.innerBeforeScript) {
      // Inner lines before a script's own line are its own; before any other command they are nobody's.
      if (sha !== undefined) {
        const tally = this.tally(sha);
        for (const described of this.pendingInner) addInner(tally, described);
      } else this.orphanScriptLines += this.pendingInner.length;
      this.pendingInner = [];
    }
    this.currentSha = sha;
    if (sha !== undefined) this.tally(sha).calls++;
  }

  /** Before the probe's lines are both in, every line is the harness's or the probe's own: none is recorded. */
  private detectOrder(name: string, args: string[], source: string): void {
    const isProbeInner = source === 'lua' && args[1] === this.probeKey;
    const isProbeScript = name === 'eval' && args[3] === this.probeKey;
    if (isProbeInner) this.probeInnerSeen = true;
    if (isProbeScript) this.probeScriptSeen = true;
    if (this.probeInnerSeen && this.probeScriptSeen) {
      // Whichever arrived second decides: the script's own line second means "inner lines before the script".
      this.innerBeforeScript = isProbeScript;
      this.probeSeen?.();
    }
  }

  private tally(sha: string): ScriptTally {
    let tally = this.scripts.get(sha);
    if (!tally) this.scripts.set(sha, (tally = { calls: 0, inner: new Map() }));
    return tally;
  }
}

function addInner(tally: ScriptTally, described: string): void {
  tally.inner.set(described, (tally.inner.get(described) ?? 0) + 1);
}

/** The SHA1 of the script an EVAL/EVALSHA line runs; undefined for any other command. */
function scriptSha(name: string, args: readonly string[]): string | undefined {
  if (name === 'evalsha' || name === 'evalsha_ro') return String(args[1]).toLowerCase();
  if (name === 'eval' || name === 'eval_ro') return createHash('sha1').update(String(args[1])).digest('hex');
  return undefined;
}

/**
 * An inner command as the census names it: its lower-case name, and for SET its condition flag, because
 * `set nx` is what makes a script an acquire (it takes a free key) and a plain `set` is not.
 */
export function describe(args: readonly string[]): string {
  const name = (args[0] ?? '').toLowerCase();
  if (name !== 'set') return name;
  const flags = args.slice(3).map((arg) => String(arg).toLowerCase());
  return flags.includes('nx') ? 'set nx' : flags.includes('xx') ? 'set xx' : 'set';
}
