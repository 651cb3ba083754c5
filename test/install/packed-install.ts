/**
 * `npm run test:install`: the package as a user gets it, on every supported NestJS major.
 *
 * 1. Clones the committed repository (a clean clone: no dist/, no node_modules), installs its dependencies
 *    without running any script, and runs `npm pack`: the `prepare` script must build the package.
 * 2. For each scenario, makes a scratch application (ESM on NestJS 12 with ioredis 6, as `nest new` makes
 *    them now; CommonJS on NestJS 10 and 11 with ioredis 5), installs the tarball with a plain
 *    `npm install` (no --legacy-peer-deps), compiles it with tsc and starts it against a real redis-server.
 *    Two concurrent POSTs to its @Locked route must answer 201 and 409.
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

/** Starts the compiled app, sends two concurrent POSTs, and returns their statuses (sorted). */
async function twoConcurrentCalls(dir: string, redis: RedisProcess): Promise<number[]> {
  const child = spawn(process.execPath, ['dist/main.js'], {
    cwd: dir,
    env: { ...process.env, REDIS_URL: redis.url },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  try {
    const url = await new Promise<string>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`the app did not start within 30 s:\n${output}`)), 30_000);
      const onData = (chunk: Buffer): void => {
        output += chunk.toString();
        const match = /listening (\S+)/.exec(output);
        if (match) {
          clearTimeout(timer);
          resolve(match[1].replace('[::1]', '127.0.0.1'));
        }
      };
      child.stdout.on('data', onData);
      child.stderr.on('data', onData);
      child.on('exit', (code) => reject(new Error(`the app exited (${code}) before listening:\n${output}`)));
    });
    const responses = await Promise.all([fetch(`${url}/job`, { method: 'POST' }), fetch(`${url}/job`, { method: 'POST' })]);
    const statuses = responses.map((response) => response.status).sort();
    const body = (await responses.find((response) => response.status === 201)?.json()) as { held?: string[] } | undefined;
    if (body?.held?.[0] !== 'job') throw new Error(`the handler did not see its lock: ${JSON.stringify(body)}`);
    return statuses;
  } finally {
    child.kill('SIGTERM');
  }
}

async function main(): Promise<void> {
  // The test servers' processes are unref'd (they must never keep a test runner alive): this keeps the
  // script alive until it is done.
  const keepAlive = setInterval(() => undefined, 60_000);
  const work = mkdtempSync(path.join(os.tmpdir(), 'nest-lock-install-'));
  const redis = await startRedis();
  let failed = false;
  try {
    const started = Date.now();
    const { tarball, clone } = packFromCleanClone(work);
    console.log(`packed ${path.basename(tarball)} from a clean clone in ${((Date.now() - started) / 1000).toFixed(1)} s`);
    for (const scenario of SCENARIOS) {
      const begun = Date.now();
      const dir = path.join(work, scenario.name);
      writeScratchApp(dir, scenario);
      const library = scenario.from === 'tarball' ? tarball : `git+file://${clone}`;
      run('npm', ['install', ...scenario.dependencies, ...COMMON_DEPENDENCIES, library], dir);
      run(path.join(dir, 'node_modules', '.bin', 'tsc'), ['-p', '.'], dir);
      const statuses = await twoConcurrentCalls(dir, redis);
      const ok = statuses[0] === 201 && statuses[1] === 409;
      failed ||= !ok;
      const seconds = ((Date.now() - begun) / 1000).toFixed(1);
      console.log(`${ok ? 'ok  ' : 'FAIL'} ${scenario.name}: statuses ${statuses.join(', ')} (${seconds} s)`);
    }
  } finally {
    await redis.stop();
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
