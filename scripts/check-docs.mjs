// Type-checks every TypeScript snippet of the documentation against the built package, as a user's application
// imports it (by its package name, through package.json's "types"), with the compiler settings of a Nest
// application: strict, legacy decorators and their metadata. A snippet that does not compile fails the check,
// named by its file and line.
//
// Usage: node scripts/check-docs.mjs [file.md | folder ...]   (default: README.md and docs/, recursively)
//
// A block fenced ```ts (or ```typescript) is one module: it must carry its own imports. A block fenced
// ```ts fragment is skipped: an excerpt that cannot stand alone on purpose (a method without its class, another
// library's API in a migration guide). See docs/design.md, "Tooling".
import {
  mkdirSync,
  readFileSync,
  readdirSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
  existsSync,
} from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const packageName = JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8')).name;

/** The settings a Nest application compiles with; the snippets must hold under the strictest of them. */
const compilerOptions = {
  strict: true,
  target: ts.ScriptTarget.ES2022,
  module: ts.ModuleKind.CommonJS,
  moduleResolution: ts.ModuleResolutionKind.Node10,
  lib: ['lib.es2022.d.ts', 'lib.esnext.disposable.d.ts'],
  experimentalDecorators: true,
  emitDecoratorMetadata: true,
  esModuleInterop: true,
  skipLibCheck: true,
  forceConsistentCasingInFileNames: true,
  noImplicitOverride: true,
  noFallthroughCasesInSwitch: true,
  types: ['node'],
  typeRoots: [path.join(root, 'node_modules', '@types')],
  noEmit: true,
};

/** The Markdown files named on the command line (folders searched for *.md), or README.md and docs/. */
function markdownFiles(args) {
  const targets = args.length > 0 ? args : ['README.md', 'docs'];
  return targets.flatMap((target) => {
    const full = path.resolve(root, target);
    if (!existsSync(full)) throw new Error(`${target}: no such file or folder`);
    return statSync(full).isDirectory() ? walk(full) : [full];
  });
}

function walk(dir) {
  return readdirSync(dir)
    .sort()
    .flatMap((entry) => {
      const full = path.join(dir, entry);
      if (statSync(full).isDirectory()) return walk(full);
      return entry.endsWith('.md') ? [full] : [];
    });
}

/**
 * The fenced blocks of one file whose language is ts or typescript: { line (1-based, of the first code line),
 * code, fragment }. Indented fences (inside a list) lose their indentation.
 */
export function extractSnippets(markdown) {
  const lines = markdown.split('\n');
  const snippets = [];
  for (let i = 0; i < lines.length; i++) {
    const open = /^(\s*)(`{3,}|~{3,})\s*([\w-]*)\s*(.*)$/.exec(lines[i]);
    if (!open) continue;
    const [, indent, fence, lang, info] = open;
    let end = i + 1;
    while (end < lines.length && !(lines[end].trim().startsWith(fence) && lines[end].trim() === fence)) end++;
    if (lang === 'ts' || lang === 'typescript') {
      const body = lines
        .slice(i + 1, end)
        .map((line) => (line.startsWith(indent) ? line.slice(indent.length) : line.trimStart()));
      snippets.push({ line: i + 2, code: body.join('\n'), fragment: /\bfragment\b/.test(info) });
    }
    i = end;
  }
  return snippets;
}

function main() {
  const types = path.join(root, 'dist', 'index.d.ts');
  if (!existsSync(types)) {
    console.error(`check-docs: ${path.relative(process.cwd(), types)} is missing: run npm run build first`);
    return 1;
  }
  const work = path.join(root, 'temp', `docs-check-${process.pid}`);
  rmSync(work, { recursive: true, force: true });
  mkdirSync(path.join(work, 'node_modules'), { recursive: true });
  // The package as an application sees it: node_modules/<name> is the repository (package.json, dist/).
  symlinkSync(root, path.join(work, 'node_modules', packageName), 'dir');
  try {
    const sources = new Map(); // snippet file -> { md, line }
    let skipped = 0;
    for (const md of markdownFiles(process.argv.slice(2))) {
      for (const snippet of extractSnippets(readFileSync(md, 'utf8'))) {
        if (snippet.fragment) {
          skipped++;
          continue;
        }
        const name = `${path.relative(root, md).replace(/[^\w]+/g, '_')}_${snippet.line}.ts`;
        const file = path.join(work, name);
        // `export {}` makes every snippet a module of its own, so two snippets' top-level names never collide.
        writeFileSync(file, `${snippet.code}\nexport {};\n`);
        sources.set(file, { md: path.relative(process.cwd(), md), line: snippet.line });
      }
    }
    const program = ts.createProgram([...sources.keys()], compilerOptions);
    const diagnostics = ts.getPreEmitDiagnostics(program);
    const reports = diagnostics.map((diagnostic) => {
      const message = ts.flattenDiagnosticMessageText(diagnostic.messageText, '\n');
      const origin = diagnostic.file && sources.get(path.resolve(diagnostic.file.fileName));
      if (!origin || diagnostic.start === undefined) {
        return {
          where: diagnostic.file ? diagnostic.file.fileName : 'check-docs',
          line: 0,
          message,
          code: diagnostic.code,
        };
      }
      const { line, character } = diagnostic.file.getLineAndCharacterOfPosition(diagnostic.start);
      return {
        where: `${origin.md}:${origin.line + line}:${character + 1}`,
        md: origin.md,
        line: origin.line + line,
        message,
        code: diagnostic.code,
      };
    });
    reports.sort((a, b) => (a.md ?? a.where).localeCompare(b.md ?? b.where) || a.line - b.line);
    for (const report of reports) console.error(`${report.where} TS${report.code}: ${report.message}`);
    const files = new Set([...sources.values()].map((origin) => origin.md)).size;
    const summary = `${sources.size} snippets checked in ${files} files against ${packageName}'s dist/, ${skipped} fragments skipped`;
    if (diagnostics.length > 0) {
      console.error(`check-docs: ${diagnostics.length} errors; ${summary}`);
      return 1;
    }
    console.log(`check-docs: ${summary}`);
    return 0;
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  try {
    process.exitCode = main();
  } catch (error) {
    console.error(`check-docs: ${error instanceof Error ? error.message : String(error)}`);
    process.exitCode = 1;
  }
}
