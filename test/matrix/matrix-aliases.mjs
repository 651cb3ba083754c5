import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));

/** The packages a matrix entry swaps for its own versions. */
const SWAPPED = [
  '@nestjs/common',
  '@nestjs/core',
  '@nestjs/testing',
  '@nestjs/platform-express',
  '@nestjs/schedule',
  'ioredis',
  'rxjs',
];

/**
 * Vite aliases that send the library's and the tests' imports of NestJS, ioredis and rxjs to the copies
 * installed under test/matrix/<entry>/node_modules; none for the default run (the repository's own,
 * current majors).
 */
export function matrixAliases(entry) {
  if (!entry) return [];
  const modules = path.join(here, entry, 'node_modules');
  if (!existsSync(modules)) {
    throw new Error(`LOCK_MATRIX=${entry}: ${modules} is missing; run \`npm run test:matrix\` (it installs it)`);
  }
  return SWAPPED.map((name) => ({
    find: new RegExp(`^${name.replace('/', '\\/')}(?=/|$)`),
    replacement: path.join(modules, name),
  }));
}
