// `npm test`'s runner: the two Vitest projects of vitest.config.mts as two Vitest processes at the same time.
// Most spec files mostly wait (leases running out, failovers, child processes starting), three at a time in the
// 'waiting' project; the 'serial' project's files keep the CPU busy or measure what a busy CPU distorts, one at
// a time. One Vitest process runs projects with different worker counts one after the other; two processes let
// the serial files run during the waiting ones instead of after them. The waiting lane prints as it goes; the
// serial lane's output is held until the waiting lane ends, so the two never interleave. Arguments are passed
// to both (a file filter, a reporter); the exit code is non-zero when either lane fails.
import { spawn } from 'node:child_process';
import { createRequire } from 'node:module';
import path from 'node:path';

const require = createRequire(import.meta.url);
const vitest = path.join(path.dirname(require.resolve('vitest/package.json')), 'vitest.mjs');
const args = process.argv.slice(2);
// Colours as a terminal would show them, though the serial lane writes to a pipe first.
const env = process.stdout.isTTY ? { ...process.env, FORCE_COLOR: '1' } : process.env;

function lane(project, live) {
  const startedAt = performance.now();
  const child = spawn(process.execPath, [vitest, 'run', '--project', project, '--passWithNoTests', ...args], {
    env,
    stdio: live ? 'inherit' : ['ignore', 'pipe', 'pipe'],
  });
  const held = [];
  let holding = !live;
  const forward = (stream, target) =>
    stream?.on('data', (chunk) => (holding ? held.push([target, chunk]) : target.write(chunk)));
  forward(child.stdout, process.stdout);
  forward(child.stderr, process.stderr);
  const exited = new Promise((resolve) => {
    child.once('error', (error) => resolve({ project, code: 1, error, seconds: 0 }));
    child.once('exit', (code, signal) =>
      resolve({ project, code: code ?? 1, signal, seconds: (performance.now() - startedAt) / 1000 }),
    );
  });
  return {
    child,
    exited,
    release() {
      holding = false;
      for (const [target, chunk] of held.splice(0)) target.write(chunk);
    },
  };
}

const waiting = lane('waiting', true);
const serial = lane('serial', false);
for (const signal of ['SIGINT', 'SIGTERM'])
  process.on(signal, () => {
    for (const { child } of [waiting, serial]) if (child.exitCode === null) child.kill(signal);
  });

const results = [await waiting.exited];
process.stdout.write(`\n--- lane 'serial' (ran beside lane 'waiting'; its output held until now) ---\n`);
serial.release();
results.push(await serial.exited);

for (const { project, code, signal, error, seconds } of results) {
  const outcome = error
    ? `could not start (${error.message})`
    : code === 0
      ? 'passed'
      : `failed (${signal ?? `exit ${code}`})`;
  process.stdout.write(`lane '${project}': ${outcome} in ${seconds.toFixed(0)} s\n`);
}
process.exit(results.some(({ code }) => code !== 0) ? 1 : 0);
