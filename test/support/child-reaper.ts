import { ChildProcess, spawn } from 'node:child_process';
import { rmSync } from 'node:fs';
import { realProcess } from './real-process';

/**
 * Makes sure a server started by a test never outlives the test process, even when a test crashes or
 * forgets to stop it:
 * - on a normal exit (including process.exit from Jest), an 'exit' hook SIGKILLs every live child and
 *   removes its temp dir;
 * - when the test process is itself killed (no hook runs), a tiny detached watchdog shell notices
 *   within a second that its parent is gone and does the same.
 */
interface Reaped {
  readonly watchdog: ChildProcess;
  readonly dir: string;
}

const reapedByChildPid = new Map<number, Reaped>();

function reapAll(): void {
  for (const [pid, { dir }] of reapedByChildPid) {
    try {
      realProcess.kill(pid, 'SIGKILL');
    } catch {
      // Already gone.
    }
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Kills `child` and removes `dir` when the test process goes away, whichever way it does. */
export function reapOnExit(child: ChildProcess, dir: string): void {
  const pid = child.pid;
  if (pid === undefined) return;
  const watchdog = spawn(
    'sh',
    [
      '-c',
      'while kill -0 "$1" 2>/dev/null; do sleep 1; done; kill -9 "$2" 2>/dev/null; rm -rf "$3"',
      'watchdog',
      String(realProcess.pid),
      String(pid),
      dir,
    ],
    { stdio: 'ignore', detached: true },
  );
  watchdog.unref();
  reapedByChildPid.set(pid, { watchdog, dir });
  // One hook for all children, installed only while some are alive, so test files do not pile up listeners.
  if (reapedByChildPid.size === 1) realProcess.on('exit', reapAll);
  child.once('exit', () => {
    // The watchdog must go with its child: it would otherwise SIGKILL whatever process reuses the pid.
    watchdog.kill('SIGKILL');
    reapedByChildPid.delete(pid);
    if (reapedByChildPid.size === 0) realProcess.off('exit', reapAll);
  });
}
