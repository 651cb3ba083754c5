import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import ts from 'typescript';

/** The repository root (this file is test/reliability/support/compiled-tree.ts). */
export const REPO_ROOT = path.resolve(__dirname, '..', '..', '..');

/** What the child processes run: the library, the sample app, and the children's own scripts. */
const SOURCE_DIRS = ['lib', 'sample-app/src', 'test/reliability/children'];

/** Where compiled trees are kept, one per content hash; trees older than this are swept. */
const CACHE_DIR = path.join(os.tmpdir(), 'nest-lock-reliability');
const STALE_AFTER_MS = 6 * 60 * 60 * 1000;

let compiledRoot: string | undefined;

/**
 * The child processes of this suite run under plain `node`, not ts-node: loading the TypeScript compiler
 * costs each child about a second, and a scenario forks several at once on a 2-core machine. So the sources
 * they need are transpiled here, once, with the compiler Jest has already loaded, into a temp tree that
 * mirrors the repository (relative imports such as '../../../lib' keep working), cached by content hash.
 * Each file is transpiled on its own, which is exactly what `isolatedModules` (tsconfig.json) promises is
 * safe, and what ts-jest does for the tests themselves. Bare imports resolve through NODE_PATH (see
 * nodeEnvironment). Unlike dist/, this tree can never be stale: it is the sources of this very run.
 */
export function compiledTree(): string {
  if (compiledRoot) return compiledRoot;
  const files = SOURCE_DIRS.flatMap((dir) => listSources(path.join(REPO_ROOT, dir)));
  const hash = createHash('sha256').update(ts.version);
  const sources = new Map<string, string>();
  for (const file of files) {
    const text = readFileSync(file, 'utf8');
    sources.set(file, text);
    hash.update(path.relative(REPO_ROOT, file)).update('\0').update(text).update('\0');
  }
  const root = path.join(CACHE_DIR, hash.digest('hex').slice(0, 16));
  if (!existsSync(path.join(root, '.complete'))) build(root, sources);
  sweepStaleTrees(root);
  compiledRoot = root;
  return root;
}

/** The compiled path of a source file given relative to the repository, e.g. 'test/reliability/children/x.ts'. */
export function compiledScript(relativeSource: string): string {
  const script = path.join(compiledTree(), relativeSource.replace(/\.ts$/, '.js'));
  if (!existsSync(script)) throw new Error(`${relativeSource} is not under ${SOURCE_DIRS.join(', ')}`);
  return script;
}

/** Environment for a compiled child: bare imports ('@nestjs/core', 'ioredis') resolve in the repository. */
export function nodeEnvironment(): NodeJS.ProcessEnv {
  return { NODE_PATH: path.join(REPO_ROOT, 'node_modules') };
}

function build(root: string, sources: ReadonlyMap<string, string>): void {
  const options = compilerOptions();
  // Built aside and renamed into place, so a concurrent Jest worker never runs a half-written tree.
  const staging = `${root}.${process.pid}.${Date.now()}`;
  for (const [file, text] of sources) {
    const output = ts.transpileModule(text, { compilerOptions: options, fileName: file, reportDiagnostics: false });
    const target = path.join(staging, path.relative(REPO_ROOT, file)).replace(/\.ts$/, '.js');
    mkdirSync(path.dirname(target), { recursive: true });
    writeFileSync(target, output.outputText);
  }
  writeFileSync(path.join(staging, '.complete'), '');
  try {
    renameSync(staging, root);
  } catch (error) {
    // Another worker finished the same tree first: use it.
    rmSync(staging, { recursive: true, force: true });
    if (!existsSync(path.join(root, '.complete'))) throw error;
  }
}

/** tsconfig.json's options, emitting CommonJS with inline source maps (stack traces point at the .ts). */
function compilerOptions(): ts.CompilerOptions {
  const configFile = path.join(REPO_ROOT, 'tsconfig.json');
  const { config } = ts.readConfigFile(configFile, ts.sys.readFile);
  const parsed = ts.parseJsonConfigFileContent(config, ts.sys, REPO_ROOT);
  return {
    ...parsed.options,
    module: ts.ModuleKind.CommonJS,
    noEmit: false,
    declaration: false,
    sourceMap: false,
    inlineSourceMap: true,
    inlineSources: false,
  };
}

function listSources(dir: string): string[] {
  if (!existsSync(dir)) return [];
  const found: string[] = [];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) found.push(...listSources(full));
    else if (entry.name.endsWith('.ts') && !entry.name.endsWith('.d.ts') && !/\.(e2e-)?spec\.ts$/.test(entry.name)) {
      found.push(full);
    }
  }
  return found;
}

/** Removes trees of earlier source versions once they are old enough that no run can still be using them. */
function sweepStaleTrees(current: string): void {
  for (const entry of readdirSync(CACHE_DIR, { withFileTypes: true })) {
    const full = path.join(CACHE_DIR, entry.name);
    if (full === current) continue;
    try {
      if (Date.now() - statSync(full).mtimeMs > STALE_AFTER_MS) rmSync(full, { recursive: true, force: true });
    } catch {
      // Swept by a concurrent run.
    }
  }
}
