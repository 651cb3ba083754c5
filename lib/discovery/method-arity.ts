/**
 * How many arguments a provider method declares, for refusing a `{N}` placeholder beyond them at startup.
 *
 * Function.length cannot say it: it stops counting at the first parameter with a default value and at a
 * rest parameter (`run(a, b = 1)` has length 1 and reads two arguments). `design:paramtypes`, which
 * TypeScript emits for decorated methods under emitDecoratorMetadata, counts every parameter but shows a
 * rest parameter as one more (`Array`, or `Object` for a generic tuple), indistinguishable from an array
 * argument. So the count is read from the method's own source text, the parameter list up to its `)`;
 * `design:paramtypes` and Function.length, where larger, are taken instead (a floor, should the reading
 * undercount).
 *
 * Unknown (undefined, and no `{N}` is refused) when the method may read arguments it does not name: a rest
 * parameter, or `arguments` anywhere in its source; and when its source is not a readable parameter list
 * (a native or bound function).
 */
export function declaredArity(method: Function, paramTypes?: unknown): number | undefined {
  let source: string;
  try {
    source = Function.prototype.toString.call(method);
  } catch {
    return undefined;
  }
  // A bound or native function shows `function () { [native code] }`, whatever it takes.
  if (source.includes('[native code]') || /\barguments\b/.test(source)) return undefined;
  const parameters = parameterListOf(source);
  if (!parameters || parameters.rest) return undefined;
  const typed = Array.isArray(paramTypes) ? paramTypes.length : 0;
  return Math.max(parameters.count, typed, method.length);
}

interface ParameterList {
  readonly count: number;
  readonly rest: boolean;
}

const CLOSERS: Record<string, string> = { '(': ')', '[': ']', '{': '}' };

/**
 * The parameters of the function whose source is `source`: `run(a, b = f(1)) {…}`, `function (a) {…}`, `a => …`.
 */
function parameterListOf(source: string): ParameterList | undefined {
  let index = 0;
  while (index < source.length) {
    const skipped = skipNonCode(source, index);
    if (skipped !== index) {
      index = skipped;
      continue;
    }
    const char = source[index];
    if (char === '(') return readParameters(source, index + 1);
    // A computed method name (`[Symbol.iterator](…)`).
    if (char === '[') {
      const end = skipBalanced(source, index + 1, ']');
      if (end < 0) return undefined;
      index = end;
      continue;
    }
    // `a => …`: one parameter, without parentheses.
    if (char === '=' && source[index + 1] === '>') return { count: 1, rest: false };
    // A body before any parameter list: not a function source this can read.
    if (char === '{' || char === '}' || char === ')') return undefined;
    index++;
  }
  return undefined;
}

/** Counts the comma-separated parameters from `start` (just past the `(`) to the matching `)`. */
function readParameters(source: string, start: number): ParameterList | undefined {
  let count = 0;
  let rest = false;
  let segmentHasCode = false;
  let index = start;
  while (index < source.length) {
    const skipped = skipNonCode(source, index);
    if (skipped < 0) return undefined;
    if (skipped !== index) {
      // A string (a default value) is code; a comment is not.
      if (source[index] !== '/') segmentHasCode = true;
      index = skipped;
      continue;
    }
    const char = source[index];
    if (char === ')' || char === ',') {
      if (segmentHasCode) count++;
      segmentHasCode = false;
      if (char === ')') return { count, rest };
      index++;
      continue;
    }
    if (/\s/.test(char)) {
      index++;
      continue;
    }
    if (!segmentHasCode && source.startsWith('...', index)) rest = true;
    segmentHasCode = true;
    if (char in CLOSERS) {
      index = skipBalanced(source, index + 1, CLOSERS[char]);
      if (index < 0) return undefined;
      continue;
    }
    index++;
  }
  return undefined;
}

/** Index just past the bracketed code from `start` to its `closer`, or -1 when it does not close. */
function skipBalanced(source: string, start: number, closer: string): number {
  let index = start;
  while (index < source.length) {
    const skipped = skipNonCode(source, index);
    if (skipped < 0) return -1;
    if (skipped !== index) {
      index = skipped;
      continue;
    }
    const char = source[index];
    if (char === closer) return index + 1;
    if (char in CLOSERS) {
      index = skipBalanced(source, index + 1, CLOSERS[char]);
      if (index < 0) return -1;
      continue;
    }
    if (char === ')' || char === ']' || char === '}') return -1;
    index++;
  }
  return -1;
}

/**
 * Index just past a string, template literal or comment starting at `index`; `index` itself when none
 * starts there; -1 when it never ends. Regular-expression literals are not recognised: one holding a
 * bracket, in a default value, makes the reading fail or miscount (then design:paramtypes still floors it).
 */
function skipNonCode(source: string, index: number): number {
  const char = source[index];
  if (char === '"' || char === "'") {
    for (let at = index + 1; at < source.length; at++) {
      if (source[at] === '\\') at++;
      else if (source[at] === char) return at + 1;
    }
    return -1;
  }
  if (char === '`') {
    for (let at = index + 1; at < source.length; at++) {
      if (source[at] === '\\') at++;
      else if (source[at] === '`') return at + 1;
      else if (source[at] === '$' && source[at + 1] === '{') {
        const end = skipBalanced(source, at + 2, '}');
        if (end < 0) return -1;
        at = end - 1;
      }
    }
    return -1;
  }
  if (char === '/' && source[index + 1] === '/') {
    const end = source.indexOf('\n', index);
    return end < 0 ? source.length : end + 1;
  }
  if (char === '/' && source[index + 1] === '*') {
    const end = source.indexOf('*/', index + 2);
    return end < 0 ? -1 : end + 2;
  }
  return index;
}
