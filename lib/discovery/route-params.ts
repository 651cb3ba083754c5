/**
 * The parameters a Nest route path declares, for checking `{params.x}` placeholders at startup.
 *
 * One path is read under every syntax a Nest HTTP adapter may give it: path-to-regexp 0.1 (Express 4),
 * path-to-regexp 8 (Express 5, Nest 11+), find-my-way (Fastify). Where they disagree the reading keeps
 * every name some adapter would see, since the check refuses a placeholder only when no parameter
 * matches: an extra name can hide a typo, a missing one would refuse a working template.
 *   - `:name`, `:name?`, `:name+`, `:name*`, `:name(\\d+)`, `{/:name}`, `:"quoted name"`, `*name` (a named
 *     wildcard): each names `name`.
 *   - `::` (find-my-way's literal colon) is not a parameter itself; the name after it still counts.
 *   - An unnamed wildcard or group (`*`, `(.*)`) is captured under a name that depends on the adapter
 *     (`0` on Express 4, `path` once Nest 11 rewrites it to `{*path}`, `*` on Fastify): the path is then
 *     marked `unnamed`, and any placeholder passes for it.
 */
export interface RouteParams {
  /** The named parameters, in path order, each once. */
  readonly names: readonly string[];
  /** True when the path also captures values under adapter-chosen names (see above). */
  readonly unnamed: boolean;
}

/**
 * The characters of a parameter name: path-to-regexp 8 takes identifier characters and `$`, which also
 * covers the `\w` of path-to-regexp 0.1 and what find-my-way reads up to its separators (`/`, `-`, `.`).
 */
const NAME = /^[\p{ID_Continue}$\u200C\u200D]+/u;
/** The part of a name path-to-regexp 0.1 reads (`\w`): `:café` is `caf` there and `café` elsewhere. */
const ASCII_NAME = /^\w+/;

export function routeParamsOf(path: string): RouteParams {
  const names = new Set<string>();
  let unnamed = false;
  let index = 0;
  while (index < path.length) {
    const char = path[index];
    if (char === ':' || char === '*') {
      const name = readName(path, index + 1);
      if (name) {
        addName(names, name);
        index = name.end;
        if (char === ':') {
          index = skipPattern(path, index);
          // `:name*` (path-to-regexp 0.1's repeat modifier) captures under `name`; `:a*b` is `a` and a wildcard `b`.
          if (path[index] === '*' && !readName(path, index + 1)) index++;
        }
        continue;
      }
      if (char === '*') unnamed = true;
      index++;
      continue;
    }
    if (char === '(') {
      unnamed = true;
      index = skipPattern(path, index);
      continue;
    }
    index++;
  }
  return { names: [...names], unnamed };
}

interface ParamName {
  readonly value: string;
  /** Index just past the name. */
  readonly end: number;
  /** `:"quoted"`, which only path-to-regexp 8 reads. */
  readonly quoted: boolean;
}

function readName(path: string, start: number): ParamName | undefined {
  if (path[start] === '"') {
    const close = path.indexOf('"', start + 1);
    if (close > start + 1) return { value: path.slice(start + 1, close), end: close + 1, quoted: true };
    return undefined;
  }
  const match = NAME.exec(path.slice(start));
  return match ? { value: match[0], end: start + match[0].length, quoted: false } : undefined;
}

function addName(names: Set<string>, name: ParamName): void {
  names.add(name.value);
  if (name.quoted) return;
  const ascii = ASCII_NAME.exec(name.value)?.[0];
  if (ascii && ascii !== name.value) names.add(ascii);
}

/** Skips a parameter's regular expression `(…)` (nested groups and `\` escapes included), if one starts here. */
function skipPattern(path: string, start: number): number {
  if (path[start] !== '(') return start;
  let depth = 0;
  for (let index = start; index < path.length; index++) {
    const char = path[index];
    if (char === '\\') index++;
    else if (char === '(') depth++;
    else if (char === ')' && --depth === 0) return index + 1;
  }
  return path.length;
}
