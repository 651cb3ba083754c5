import { defineConfig } from 'vitest/config';
import { matrixAliases } from './test/matrix/matrix-aliases.mjs';
import { typescriptTransform } from './test/support/typescript-transform.mjs';

const SPECS = ['lib/**/*.spec.ts', 'test/**/*.spec.ts', 'test/**/*.e2e-spec.ts'];
/**
 * Never specs: dependencies, the build, the benchmark, the matrix's own folders. Under the version matrix
 * (LOCK_MATRIX, test/matrix/run-matrix.mjs) also the per-transport suites: they need the transports' current
 * majors, which the matrix entries do not install.
 */
const NEVER = [
  '**/node_modules/**',
  'dist/**',
  'test/bench/**',
  'test/matrix/**',
  ...(process.env.LOCK_MATRIX ? ['test/locked/transports/**'] : []),
];

/**
 * The specs that keep the CPU busy (a load generator, fleets of lock-cycling processes, an exhaustive
 * injectivity check) or that measure what a busy CPU distorts (CPU time while idle, heap growth, commands and
 * hand-over latency per acquisition under contention). They run one file at a time, after the others: beside
 * them, their CPU use made other specs' short command timeouts (100-250 ms at ttls around 1 s) expire.
 */
const SERIAL = [
  'lib/keys/key-template.spec.ts',
  'test/core/command-count.spec.ts',
  'test/core/engine-edges.spec.ts',
  'test/core/waiting.spec.ts',
  'test/redlock/redlock-contention.spec.ts',
  'test/reliability/history.spec.ts',
  'test/reliability/load.spec.ts',
  'test/reliability/primitives-history.spec.ts',
];

/**
 * Vitest, not Jest: NestJS 12 is ESM-only, and Jest on Node 20 cannot load ESM from CommonJS test code
 * (`require(esm)` is Node's, not Jest's module system). TypeScript itself compiles the sources, with
 * legacy decorators and the design-type metadata Nest's dependency injection reads (see
 * test/support/typescript-transform.mjs).
 *
 * LOCK_MATRIX=nest10 | nest11 runs the same suites against an older NestJS and ioredis 5, installed
 * under test/matrix/<entry>/ (see test/matrix/README.md).
 */
export default defineConfig({
  plugins: [typescriptTransform('tsconfig.json')],
  // TypeScript compiles the .ts files (typescriptTransform); esbuild must not transform them again.
  oxc: false,
  esbuild: false,
  resolve: { alias: matrixAliases(process.env.LOCK_MATRIX) },
  test: {
    globals: true,
    pool: 'forks',
    // One module graph per worker process for all its files: loading NestJS and the transports anew for each
    // file cost about a minute (import 63 s isolated, 14 s shared, measured here). Every file starts and stops
    // its own servers (free ports) and apps, and uses keys of its own, so none relies on a fresh module state;
    // a file's spies and process listeners live in its worker, which runs one file at a time.
    isolate: false,
    testTimeout: 60_000,
    hookTimeout: 60_000,
    projects: [
      {
        // Most files mostly wait: for leases to run out, failovers, paused servers, child processes. Two side
        // by side overlap those waits; a new spec file joins them by the glob. Not three: on a 2-core machine
        // already loaded by other work, three at once made commands with 120 ms timeouts (ttls under 1 s) time out.
        extends: true,
        test: {
          name: 'waiting',
          include: SPECS,
          exclude: [...NEVER, ...SERIAL],
          maxWorkers: 2,
          sequence: { groupOrder: 0 },
        },
      },
      {
        extends: true,
        test: {
          name: 'serial',
          include: SERIAL,
          maxWorkers: 1,
          sequence: { groupOrder: 1 },
        },
      },
    ],
  },
});
