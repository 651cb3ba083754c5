import { readFileSync } from 'node:fs';
import path from 'node:path';

/** The installed version of a dependency, read from its package.json (exports maps may hide it from require). */
export function packageVersion(name: string): string {
  const file = path.join(__dirname, '..', '..', '..', 'node_modules', name, 'package.json');
  const { version } = JSON.parse(readFileSync(file, 'utf8')) as { version: string };
  return version.replace(/^v/, '');
}
