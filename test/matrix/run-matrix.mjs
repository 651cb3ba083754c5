/**
 * `npm run test:matrix`: the core and @Locked suites (and the unit specs) on the older supported majors,
 * NestJS 10 and 11 with ioredis 5. Each entry is a dependency set of its own under test/matrix/<entry>/,
 * installed from its lock file; Vitest aliases the library's and the tests' imports to it
 * (matrix-aliases.mjs), so the very same test files run. The per-transport suites need the transports'
 * current majors and are left to the default run.
 */
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, '..', '..');
const ENTRIES = ['nest10', 'nest11'];
// The per-transport suites under test/locked/transports/ are left out by vitest.config.mts when LOCK_MATRIX is set
// (an --exclude here would not reach the config's projects, whose own exclude lists replace it).
const SUITES = ['lib', 'test/core', 'test/locked'];

function run(command, args, options) {
  const result = spawnSync(command, args, { stdio: 'inherit', ...options });
  if (result.status !== 0) {
    console.error(`${command} ${args.join(' ')} failed (exit ${result.status ?? result.signal})`);
    process.exit(result.status || 1);
  }
}

for (const entry of ENTRIES) {
  console.log(`\n=== matrix ${entry}: installing ===`);
  run('npm', ['ci', '--ignore-scripts', '--no-audit', '--no-fund'], { cwd: path.join(here, entry) });
  console.log(`=== matrix ${entry}: ${SUITES.join(', ')} ===`);
  run('npx', ['vitest', 'run', ...SUITES], {
    cwd: root,
    env: { ...process.env, LOCK_MATRIX: entry },
  });
}
console.log(`\nmatrix: ${ENTRIES.join(', ')} passed`);
