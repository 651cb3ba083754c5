// Imports in lib/ run one way, from the layers a user touches down to the Redis client (docs/design.md,
// "Layers"): a file may import from its own layer and the layers below it, never from a layer above.
// Type-only imports count too: a type from above ties a lower layer to an upper one's design just the same.
// Exits 1 naming every import that goes up, and every file no layer claims.
import { readFileSync, readdirSync, statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

/** Top to bottom. A path is claimed by its longest matching prefix. */
const LAYERS = [
  ['module wiring', ['lib/index.ts', 'lib/lock.module.ts', 'lib/lock.module-definition.ts', 'lib/lock.providers.ts']],
  ['decorators', ['lib/decorators/locked.decorator.ts']],
  ['interceptors and discovery', ['lib/interceptors/', 'lib/discovery/', 'lib/health/', 'lib/testing/']],
  ['service', ['lib/lock.service.ts']],
  ['engine', ['lib/engine/', 'lib/fencing/', 'lib/observability/']],
  ['stores', ['lib/stores/']],
  ['clients', ['lib/stores/clients/']],
  // What the decorators write and the interceptor, explorer and provider methods read.
  ['metadata', ['lib/decorators/']],
  [
    'foundations',
    ['lib/options/', 'lib/keys/', 'lib/errors/', 'lib/util/', 'lib/lock.constants.ts', 'lib/lock.interface.ts'],
  ],
];

function layerOf(file) {
  let best;
  LAYERS.forEach(([name, prefixes], index) => {
    for (const prefix of prefixes) {
      if ((file === prefix || file.startsWith(prefix)) && (!best || prefix.length > best.prefix.length))
        best = { index, name, prefix };
    }
  });
  return best;
}

function sources(dir) {
  return readdirSync(dir).flatMap((entry) => {
    const full = path.join(dir, entry);
    if (statSync(full).isDirectory()) return sources(full);
    return entry.endsWith('.ts') && !entry.endsWith('.spec.ts') ? [path.relative(root, full)] : [];
  });
}

function resolve(from, specifier) {
  const base = path.normalize(path.join(path.dirname(from), specifier));
  for (const candidate of [`${base}.ts`, path.join(base, 'index.ts')]) {
    try {
      if (statSync(path.join(root, candidate)).isFile()) return candidate;
    } catch {
      // not this one
    }
  }
  return undefined;
}

/** What an index.ts re-exports stands for the files it names: the check follows them. */
const IMPORT = /(?:import|export)\s[^'";]*?from\s*['"](\.[^'"]+)['"]/g;

const problems = [];
for (const file of sources(path.join(root, 'lib'))) {
  const own = layerOf(file);
  if (!own) {
    problems.push(`${file}: no layer claims it (scripts/check-layers.mjs, LAYERS)`);
    continue;
  }
  // An index.ts only re-exports its folder: it belongs to the folder's layer and is checked through its users.
  if (path.basename(file) === 'index.ts' && file !== 'lib/index.ts') continue;
  for (const [, specifier] of readFileSync(path.join(root, file), 'utf8').matchAll(IMPORT)) {
    const target = resolve(file, specifier);
    if (!target) continue;
    const targets = path.basename(target) === 'index.ts' && target !== 'lib/index.ts' ? reexported(target) : [target];
    for (const imported of targets) {
      const theirs = layerOf(imported);
      if (theirs && theirs.index < own.index) {
        problems.push(`${file} (${own.name}) imports ${imported} (${theirs.name}), a layer above it`);
      }
    }
  }
}

function reexported(index) {
  const files = [];
  for (const [, specifier] of readFileSync(path.join(root, index), 'utf8').matchAll(IMPORT)) {
    const target = resolve(index, specifier);
    if (target) files.push(...(path.basename(target) === 'index.ts' ? reexported(target) : [target]));
  }
  return files;
}

if (problems.length > 0) {
  console.error(
    `Imports that go up a layer (${problems.length}):\n${problems.map((problem) => `  ${problem}`).join('\n')}`,
  );
  process.exit(1);
}
console.log('layers: every import in lib/ goes down or stays in its layer');
