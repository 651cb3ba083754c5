// A second copy of the ioredis installed here, as an application that installs its own ioredis lends the module.
import type Redis from 'ioredis';
import { createRequire } from 'node:module';
import path from 'node:path';

const nodeRequire = createRequire(__filename);

let copy: typeof Redis | undefined;

/**
 * The `Redis` class of a second copy of the ioredis installed here: its modules loaded again, outside the
 * require cache the library's copy lives in, so its Redis, Command and Pipeline are other classes than the
 * library's, as those of an application's own ioredis are (another version, or the same one installed twice).
 * The cache is left as it was: every other import of 'ioredis' still gets the library's copy.
 */
export function secondIoredisCopy(): typeof Redis {
  if (copy) return copy;
  const main = nodeRequire.resolve('ioredis');
  const folder = main.slice(
    0,
    main.lastIndexOf(`${path.sep}ioredis${path.sep}`) + `${path.sep}ioredis${path.sep}`.length,
  );
  const saved = new Map<string, NodeJS.Module>();
  for (const [file, module] of Object.entries(nodeRequire.cache)) {
    if (module && file.startsWith(folder)) saved.set(file, module);
  }
  for (const file of saved.keys()) delete nodeRequire.cache[file];
  try {
    copy = (nodeRequire(main) as { default: typeof Redis }).default;
  } finally {
    for (const file of Object.keys(nodeRequire.cache)) if (file.startsWith(folder)) delete nodeRequire.cache[file];
    for (const [file, module] of saved) nodeRequire.cache[file] = module;
  }
  return copy;
}
