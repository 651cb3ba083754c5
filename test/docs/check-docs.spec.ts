import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

// npm run docs:check (scripts/check-docs.mjs) run as CI runs it, on Markdown written here: a snippet that does
// not compile against the built package fails the check, named by file and line; a good one, and a fragment
// that would not compile alone, pass. Needs dist/ (npm test builds it first).
const root = path.resolve(__dirname, '..', '..');
const checker = path.join(root, 'scripts', 'check-docs.mjs');
// Each run compiles its page against Nest's and this package's types: seconds, more on a loaded machine.
const COMPILE_TIMEOUT = 120_000;

const goodSnippet = [
  '```ts',
  "import { Injectable } from '@nestjs/common';",
  "import { LockService, Locked } from 'nestjs-redis-lock';",
  '',
  '@Injectable()',
  'export class JobsService {',
  '  constructor(private readonly locks: LockService) {}',
  '',
  "  @Locked('job:{0}', { wait: 0, onBusy: 'skip' })",
  '  async run(name: string): Promise<void> {',
  '    const lock = this.locks.current();',
  '    if (lock?.signal.aborted) return;',
  '    await Promise.resolve(name);',
  '  }',
  '}',
  '```',
].join('\n');

function check(markdown: string) {
  const dir = mkdtempSync(path.join(tmpdir(), 'check-docs-'));
  try {
    const file = path.join(dir, 'page.md');
    writeFileSync(file, markdown);
    const run = spawnSync(process.execPath, [checker, file], {
      cwd: root,
      encoding: 'utf8',
      timeout: COMPILE_TIMEOUT - 10_000,
    });
    return { status: run.status, output: `${run.stdout}${run.stderr}` };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

describe('npm run docs:check', () => {
  it(
    'passes a page whose snippets compile against the built package, and skips fragments',
    () => {
      const result = check(`# Good\n\n${goodSnippet}\n\n\`\`\`ts fragment\nthis.locks.withLock(key, fn);\n\`\`\`\n`);
      expect(result.output).toContain('1 snippets checked in 1 files');
      expect(result.output).toContain('1 fragments skipped');
      expect(result.status).toBe(0);
    },
    COMPILE_TIMEOUT,
  );

  it(
    'fails on a snippet that uses the API wrongly, naming the file and the line',
    () => {
      const broken = [
        '```ts',
        "import { LockModule } from 'nestjs-redis-lock';",
        '',
        "LockModule.forRoot({ redis: 'redis://localhost:6379', tll: 5_000 });",
        '```',
      ].join('\n');
      const result = check(`# Broken\n\n${goodSnippet}\n\nText.\n\n${broken}\n`);
      expect(result.status).toBe(1);
      // The broken call is line 25 of the page: heading and blank (2), the good snippet (16), blank, text, blank,
      // the fence, the import and a blank line.
      expect(result.output).toMatch(/page\.md:25:\d+ TS2353: .*'tll'/);
      expect(result.output).toContain('1 errors; 2 snippets checked');
    },
    COMPILE_TIMEOUT,
  );

  it(
    'fails on a snippet that imports a name the package does not export',
    () => {
      const result = check(
        "```ts\nimport { LockManager } from 'nestjs-redis-lock';\n\nexport const manager = LockManager;\n```\n",
      );
      expect(result.status).toBe(1);
      expect(result.output).toMatch(/page\.md:2:\d+ TS2305: .*LockManager/);
    },
    COMPILE_TIMEOUT,
  );
});
