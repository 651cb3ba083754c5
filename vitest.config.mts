import { defineConfig } from 'vitest/config';
import { matrixAliases } from './test/matrix/matrix-aliases.mjs';
import { typescriptTransform } from './test/support/typescript-transform.mjs';

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
    include: ['lib/**/*.spec.ts', 'test/**/*.spec.ts', 'test/**/*.e2e-spec.ts'],
    exclude: ['**/node_modules/**', 'dist/**', 'test/bench/**', 'test/matrix/**'],
    // The suites start real redis-server processes on free ports and time real leases: one file at a time
    // keeps a shared 2-core machine from stretching the timings they check. Inside a file, the store rows of
    // the suites that mostly wait on leases run side by side (describeEachStore in test/support/store-matrix.ts).
    fileParallelism: false,
    pool: 'forks',
    // One module graph for all files: loading NestJS and the transports anew for each of ~80 files cost about
    // a minute of a 6-minute budget (import 63 s isolated, 14 s shared, measured here). Every file starts and
    // stops its own servers and apps, so none relies on a fresh module state.
    isolate: false,
    testTimeout: 60_000,
    hookTimeout: 60_000,
  },
});
