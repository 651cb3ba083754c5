// Copies of ioredis that are not the library's own, as an application has them, installed under test/matrix/lent-clients.
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import LibraryRedis from 'ioredis';

/** The copies test/matrix/lent-clients/package.json installs (npm aliases of ioredis 5 and 6). */
export type LentIoredisCopy = 'ioredis5' | 'ioredis6';

/** What the benchmark uses of such a copy's client. */
export interface LentIoredisClient {
  quit(): Promise<unknown>;
  disconnect(): void;
}

/** A copy's module: its Redis class and its Command class (for the client-side command count). */
export interface LentIoredis {
  readonly Redis: new (url: string) => LentIoredisClient;
  readonly Command: { readonly prototype: object };
  readonly version: string;
}

const FOLDER = path.join(__dirname, '..', '..', 'matrix', 'lent-clients');
const MODULES = path.join(FOLDER, 'node_modules');

/**
 * Installs the folder's dependencies from its lock file when they are missing, as `npm run test:matrix` does
 * for its entries (test/matrix/run-matrix.mjs): never into the repository's own node_modules.
 */
function ensureInstalled(copy: LentIoredisCopy): void {
  if (existsSync(path.join(MODULES, copy, 'package.json'))) return;
  process.stderr.write(`Installing ${path.relative(process.cwd(), FOLDER)} (npm ci)...\n`);
  const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';
  const result = spawnSync(npm, ['ci', '--ignore-scripts', '--no-audit', '--no-fund'], {
    cwd: FOLDER,
    stdio: ['ignore', 'inherit', 'inherit'],
  });
  if (result.status !== 0) throw new Error(`npm ci in ${FOLDER} failed (exit ${result.status ?? result.signal})`);
}

const loaded = new Map<LentIoredisCopy, LentIoredis>();

/** A copy of ioredis other than the library's own (a distinct module: checked, or the contestant would be moot). */
export function lentIoredis(copy: LentIoredisCopy): LentIoredis {
  let module = loaded.get(copy);
  if (module) return module;
  ensureInstalled(copy);
  const folder = path.join(MODULES, copy);
  // eslint-disable-next-line @typescript-eslint/no-require-imports -- a path known only at run time
  const exports = require(folder) as { default: LentIoredis['Redis'] & { Command: LentIoredis['Command'] } };
  const Redis = exports.default;
  if ((Redis as unknown) === LibraryRedis) throw new Error(`${folder} resolved to the library's own ioredis`);
  const { version } = JSON.parse(readFileSync(path.join(folder, 'package.json'), 'utf8')) as { version: string };
  module = { Redis, Command: Redis.Command, version };
  loaded.set(copy, module);
  return module;
}

/** The copies loaded so far: their Command classes are counted too (see installClientCommandCounter). */
export function loadedLentIoredis(): readonly LentIoredis[] {
  return [...loaded.values()];
}
