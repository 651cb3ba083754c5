// Runs `npm ci` when node_modules is missing or older than package-lock.json, so that `npm test` and
// `npm run sample` each set a fresh clone up on their own, and a second of them installs nothing again.
import { spawnSync } from 'node:child_process';
import { existsSync, statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
// npm writes this file at the end of every install: its age is the installation's.
const installed = path.join(root, 'node_modules', '.package-lock.json');
const lock = path.join(root, 'package-lock.json');

if (existsSync(installed) && statSync(installed).mtimeMs >= statSync(lock).mtimeMs) process.exit(0);

process.stdout.write('node_modules is missing or older than package-lock.json: running npm ci\n');
const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';
const result = spawnSync(npm, ['ci', '--no-audit', '--no-fund'], { cwd: root, stdio: 'inherit' });
process.exit(result.status ?? 1);
