/**
 * `npm run test:install`: the package as a user gets it, on every supported NestJS major.
 *
 * 1. Clones the committed repository (a clean clone: no dist/, no node_modules), installs its dependencies
 *    without running any script, and runs `npm pack`: the `prepare` script must build the package.
 * 2. For each scenario, makes a scratch application (ESM on NestJS 12 with ioredis 6, as `nest new` makes
 *    them now; CommonJS on NestJS 10 and 11 with ioredis 5), installs the tarball with a plain
 *    `npm install` (no --legacy-peer-deps), compiles it with tsc and starts it against a real redis-server.
 *    Two concurrent POSTs to its @Locked route must answer 201 and 409, and so must two to a plain route
 *    calling a @Locked service method (409 with Retry-After, nothing registered by the app). Started again
 *    with a wrong password, it must log one startup line naming the authentication failure, answer 503, and
 *    show the password nowhere (its output, the response).
 * 3. The same NestJS 12 application installed from the git repository (`git+file://`), the other install
 *    path, whose `prepare` builds the package on the user's machine.
 *
 * Exits non-zero on the first failure. Needs git, npm with registry access, and redis-server.
 */
import { execFileSync, spawn } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startRedis, type RedisProcess } from '../support/redis-server';

const REPO = path.resolve(__dirname, '..', '..');
const APP_SOURCE = path.join(__dirname, 'app', 'main.ts.txt');

interface Scenario {
  readonly name: string;
  readonly moduleType: 'module' | 'commonjs';
  readonly dependencies: readonly string[];
  /** What to install the library from: the packed tarball, or the git repository. */
  readonly from: 'tarball' | 'git';
}

const NEST_12 = ['@nestjs/common@12', '@nestjs/core@12', '@nestjs/platform-express@12', 'ioredis@6'];
const SCENARIOS: readonly Scenario[] = [
  { name: 'nest12-esm-ioredis6', moduleType: 'module', dependencies: NEST_12, from: 'tarball' },
  {
    name: 'nest11-cjs-ioredis5',
    moduleType: 'commonjs',
    dependencies: ['@nestjs/common@11', '@nestjs/core@11', '@nestjs/platform-express@11', 'ioredis@5'],
    from: 'tarball',
  },
  {
    name: 'nest10-cjs-ioredis5',
    moduleType: 'commonjs',
    dependencies: ['@nestjs/common@10', '@nestjs/core@10', '@nestjs/platform-express@10', 'ioredis@5'],
    from: 'tarball',
  },
  { name: 'nest12-esm-git-install', moduleType: 'module', dependencies: NEST_12, from: 'git' },
];

const COMMON_DEPENDENCIES = ['reflect-metadata@0.2', 'rxjs@7', 'typescript@5.9', '@types/node@20'];

function run(command: string, args: readonly string[], cwd: string): string {
  try {
    return execFileSync(command, args, { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], env: quietNpm() });
  } catch (error) {
    const failed = error as { stdout?: string; stderr?: string };
    // eslint-disable-next-line preserve-caught-error -- the output is in the message already
    throw new Error(`${command} ${args.join(' ')} failed in ${cwd}:\n${failed.stdout ?? ''}\n${failed.stderr ?? ''}`);
  }
}

function quietNpm(): NodeJS.ProcessEnv {
  return { ...process.env, npm_config_audit: 'false', npm_config_fund: 'false', npm_config_update_notifier: 'false' };
}

/** A clean clone of the committed HEAD, packed by npm (whose `prepare` builds it). */
function packFromCleanClone(work: string): { tarball: string; clone: string } {
  const clone = path.join(work, 'clone');
  run('git', ['clone', '--quiet', '--no-local', REPO, clone], work);
  run('npm', ['ci', '--ignore-scripts'], clone);
  run('npm', ['pack', '--pack-destination', work], clone);
  const tarball = readdirSync(work).find((file) => file.endsWith('.tgz'));
  if (!tarball) throw new Error('npm pack wrote no tarball');
  const listing = run('tar', ['-tzf', path.join(work, tarball)], work);
  for (const required of ['package/dist/index.js', 'package/dist/index.d.ts', 'package/LICENSE']) {
    if (!listing.includes(required)) throw new Error(`the packed package lacks ${required}`);
  }
  for (const forbidden of ['package/test/', 'package/sample-app/', 'package/bench-results/', '.spec.']) {
    if (listing.includes(forbidden)) throw new Error(`the packed package contains ${forbidden}`);
  }
  return { tarball: path.join(work, tarball), clone };
}

function writeScratchApp(dir: string, scenario: Scenario): void {
  mkdirSync(path.join(dir, 'src'), { recursive: true });
  writeFileSync(
    path.join(dir, 'package.json'),
    JSON.stringify({ name: scenario.name, private: true, version: '0.0.0', type: scenario.moduleType }, null, 2),
  );
  const esm = scenario.moduleType === 'module';
  writeFileSync(
    path.join(dir, 'tsconfig.json'),
    JSON.stringify(
      {
        compilerOptions: {
          target: 'ES2022',
          module: esm ? 'nodenext' : 'commonjs',
          moduleResolution: esm ? 'nodenext' : 'node',
          experimentalDecorators: true,
          emitDecoratorMetadata: true,
          strict: true,
          // What a strict user project may add: `redis: process.env.REDIS_URL` (string | undefined) must still
          // type-check against the options (a trial found it did not).
          exactOptionalPropertyTypes: true,
          skipLibCheck: true,
          esModuleInterop: true,
          outDir: 'dist',
          types: ['node'],
        },
        include: ['src'],
      },
      null,
      2,
    ),
  );
  copyFileSync(APP_SOURCE, path.join(dir, 'src', 'main.ts'));
}

/** The compiled app, started with `redisUrl`, once it listens: its URL, its output so far, and a way to stop it. */
async function startApp(
  dir: string,
  redisUrl: string,
): Promise<{ url: string; output: () => string; stop: () => void }> {
  const child = spawn(process.execPath, ['dist/main.js'], {
    cwd: dir,
    env: { ...process.env, REDIS_URL: redisUrl },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  const onData = (chunk: Buffer): void => void (output += chunk.toString());
  child.stdout.on('data', onData);
  child.stderr.on('data', onData);
  try {
    const url = await new Promise<string>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`the app did not start within 30 s:\n${output}`)), 30_000);
      const onListening = (): void => {
        const match = /listening (\S+)/.exec(output);
        if (!match) return;
        clearTimeout(timer);
        resolve(match[1].replace('[::1]', '127.0.0.1'));
      };
      child.stdout.on('data', onListening);
      child.stderr.on('data', onListening);
      child.on('exit', (code) => reject(new Error(`the app exited (${code}) before listening:\n${output}`)));
    });
    return { url, output: () => output, stop: () => void child.kill('SIGTERM') };
  } catch (error) {
    child.kill('SIGTERM');
    throw error;
  }
}

/** Two concurrent POSTs to `route`: their statuses (sorted) and the busy answer's Retry-After. */
async function twoConcurrentCalls(
  url: string,
  route: string,
): Promise<{ statuses: number[]; retryAfter: string | null }> {
  const responses = await Promise.all([
    fetch(`${url}${route}`, { method: 'POST' }),
    fetch(`${url}${route}`, { method: 'POST' }),
  ]);
  const statuses = responses.map((response) => response.status).sort();
  return {
    statuses,
    retryAfter: responses.find((response) => response.status === 409)?.headers.get('retry-after') ?? null,
  };
}

/** The app on a healthy Redis: the @Locked route and the @Locked service method each answer 201 and 409. */
async function lockedCalls(dir: string, redis: RedisProcess): Promise<string[]> {
  const app = await startApp(dir, redis.url);
  try {
    const problems: string[] = [];
    const route = await twoConcurrentCalls(app.url, '/job');
    if (route.statuses.join() !== '201,409') problems.push(`@Locked route: statuses ${route.statuses.join(', ')}`);
    const service = await twoConcurrentCalls(app.url, '/report');
    if (service.statuses.join() !== '201,409')
      problems.push(`@Locked service method: statuses ${service.statuses.join(', ')}`);
    if (service.retryAfter === null) problems.push('@Locked service method: no Retry-After on the 409');
    return problems;
  } finally {
    app.stop();
  }
}

/** The app given a wrong password: one startup line naming it, 503 to a lock call, the password nowhere. */
async function wrongPassword(dir: string, guarded: RedisProcess): Promise<string[]> {
  const secret = 'wrong-install-pw-3c9b';
  const app = await startApp(dir, `redis://:${secret}@${guarded.host}:${guarded.port}`);
  try {
    const response = await fetch(`${app.url}/job`, { method: 'POST' });
    const body = await response.text();
    await new Promise((resolve) => setTimeout(resolve, 200));
    const output = app.output();
    const problems: string[] = [];
    const startupLines = output.split('\n').filter((line) => line.includes('Lock store not ready at startup'));
    if (startupLines.length !== 1 || !startupLines[0].includes('authentication failed')) {
      problems.push(`expected one startup line naming the authentication failure:\n${output}`);
    }
    if (response.status !== 503) problems.push(`a lock call answered ${response.status}, not 503`);
    if (output.includes(secret) || body.includes(secret)) problems.push(`the password is shown:\n${output}\n${body}`);
    return problems;
  } finally {
    app.stop();
  }
}

async function main(): Promise<void> {
  // The test servers' processes are unref'd (they must never keep a test runner alive): this keeps the
  // script alive until it is done.
  const keepAlive = setInterval(() => undefined, 60_000);
  const work = mkdtempSync(path.join(os.tmpdir(), 'nest-lock-install-'));
  const redis = await startRedis();
  const guarded = await startRedis();
  await guarded.command('CONFIG', 'SET', 'requirepass', 'right-install-pw-71aa');
  let failed = false;
  try {
    const started = Date.now();
    const { tarball, clone } = packFromCleanClone(work);
    console.log(
      `packed ${path.basename(tarball)} from a clean clone in ${((Date.now() - started) / 1000).toFixed(1)} s`,
    );
    for (const scenario of SCENARIOS) {
      const begun = Date.now();
      const dir = path.join(work, scenario.name);
      writeScratchApp(dir, scenario);
      const library = scenario.from === 'tarball' ? tarball : `git+file://${clone}`;
      run('npm', ['install', ...scenario.dependencies, ...COMMON_DEPENDENCIES, library], dir);
      run(path.join(dir, 'node_modules', '.bin', 'tsc'), ['-p', '.'], dir);
      const problems = [...(await lockedCalls(dir, redis)), ...(await wrongPassword(dir, guarded))];
      failed ||= problems.length > 0;
      const seconds = ((Date.now() - begun) / 1000).toFixed(1);
      console.log(
        `${problems.length === 0 ? 'ok  ' : 'FAIL'} ${scenario.name} (${seconds} s)${problems.map((problem) => `\n  ${problem}`).join('')}`,
      );
    }
  } finally {
    await Promise.all([redis.stop(), guarded.stop()]);
    rmSync(work, { recursive: true, force: true });
    clearInterval(keepAlive);
  }
  const passed = failed ? 'some' : 'all';
  console.log(`packed install: ${passed} scenarios passed`);
  if (failed) process.exitCode = 1;
}

main().catch((error: unknown) => {
  console.error(error);
  process.exitCode = 1;
});
