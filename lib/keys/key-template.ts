// @Locked key templates: parsed once when the decorator applies, rendered per call with injective value encoding.
import { InvalidLockKeyError, LockOptionsError } from '../errors';
import type { LockKeySource } from '../lock.interface';
import { normalizeKeys } from './lock-key.validator';
import { isLeaderKey, LEADER_KEY_PREFIX } from './leader-namespace';

/**
 * Key templates of @Locked: `order:{params.id}`, `transfer:{0}:{1.accountId}`.
 *
 * A template is parsed once, when @Locked is applied (so a malformed one fails while the class loads, i.e.
 * at bootstrap), into literal text and placeholders; each call only looks the placeholders up and
 * encodes their values.
 *
 * Encoding (why two different inputs never build the same key): a value is copied as it is except that
 * these characters are percent-encoded as the `%XX` bytes of their UTF-8 form:
 *   - `%` itself, so an encoded value decodes back in exactly one way;
 *   - `:`, `{` and `}` (the usual Redis separator and the Cluster hash-tag braces), controls and space;
 *   - the first character of the text between two placeholders of this template (e.g. the `-` of
 *     `{0}-{1}`), so the end of each value is found unambiguously.
 * With that, `{0}:{1}` over ('a:b', 'c') gives `a%3Ab:c`, and over ('a', 'b:c') gives `a:b%3Ac`.
 * Proof sketch: reading the key left to right, an encoded value is a run of tokens that are either a
 * character never escaped or `%XX`; the text after a value starts with a character that the value would
 * have escaped and that is not `%`, so the value ends at the first place that text can start. Hence the
 * rules below: two placeholders must be separated by some text, and that text must not contain `%`.
 * Numbers, bigints and booleans are written as `String(value)` (so 7 and '7' name the same lock: a route
 * parameter and a JSON body field holding the same id must collide).
 */

/** What a placeholder on a route handler may start with (the parts of the request, or the RPC/WS payload). */
export const ROUTE_KEY_ROOTS = ['params', 'query', 'body', 'headers', 'user', 'data'] as const;
export type RouteKeyRoot = (typeof ROUTE_KEY_ROOTS)[number];

/** A key function of @Locked: builds the key(s) from the call. */
export type LockKeyFunction = (source: LockKeySource) => string | readonly string[];

/** What @Locked accepts as its key. */
export type LockedKey = string | readonly string[] | LockKeyFunction;

/**
 * Which part of a call the placeholders read: `route` for `{params.id}`-style placeholders (route
 * handlers), `argument` for `{0}`-style ones (other provider methods), `none` for keys that work on
 * both (constant templates and key functions).
 */
export type KeySourceKind = 'route' | 'argument' | 'none';

export interface KeyPlaceholder {
  /** As written in the template, braces included: `{body.a.b}`. */
  readonly text: string;
  /** `params`, `query`, ... or an argument index such as `0`. */
  readonly root: string;
  /** The property path below the root (header names lower-cased). */
  readonly path: readonly string[];
  readonly kind: 'route' | 'argument';
}

/** A key as @Locked keeps it after parsing: builds the lock names of one call. */
export interface CompiledLockKey {
  readonly kind: KeySourceKind;
  /** The template(s) as written, or `a key function`: for error messages. */
  readonly description: string;
  /** Every placeholder of the template(s), for the checks made at startup; none for a key function. */
  readonly placeholders: readonly KeyPlaceholder[];
  /** The lock names for this call, validated by normalizeKeys. Throws InvalidLockKeyError. */
  build(source: LockKeySource): string[];
}

const SEGMENT = /^[A-Za-z0-9_$-]+$/;
const ARGUMENT_INDEX = /^(0|[1-9][0-9]*)$/;
/** Under the `u` flag a surrogate pair is one code point, so this matches only unpaired surrogates. */
const LONE_SURROGATE = /[\uD800-\uDFFF]/u;
/** Always escaped in values; see the header comment. */
const ALWAYS_ESCAPED = ['%', ':', '{', '}'];

export class KeyTemplate {
  private constructor(
    readonly source: string,
    private readonly parts: readonly (string | KeyPlaceholder)[],
    private readonly escaped: RegExp,
  ) {}

  /** Parses a template; LockOptionsError when it is malformed. */
  static parse(source: string): KeyTemplate {
    if (typeof source !== 'string' || source.length === 0) {
      throw new LockOptionsError('@Locked key', source, 'a non-empty key template such as "order:{params.id}"');
    }
    const parts: (string | KeyPlaceholder)[] = [];
    let literal = '';
    for (let index = 0; index < source.length; index++) {
      const char = source[index];
      if (char === '}') malformed(source, `a '}' at position ${index} closes no '{'`);
      if (char !== '{') {
        literal += char;
        continue;
      }
      const close = source.indexOf('}', index + 1);
      if (close < 0) malformed(source, `the '{' at position ${index} is never closed`);
      const inner = source.slice(index + 1, close);
      if (inner.includes('{')) malformed(source, `the '{' at position ${index} is not closed before the next '{'`);
      if (literal) parts.push(literal);
      literal = '';
      parts.push(parsePlaceholder(source, inner));
      index = close;
    }
    if (literal) parts.push(literal);

    const placeholders = parts.filter(isPlaceholder);
    const kinds = new Set(placeholders.map((placeholder) => placeholder.kind));
    if (kinds.size > 1) {
      malformed(source, 'it mixes argument placeholders ({0}) with request placeholders ({params.id})');
    }
    const escaped = new Set(ALWAYS_ESCAPED);
    parts.forEach((part, index) => {
      if (!isPlaceholder(part)) return;
      const next = parts[index + 1];
      if (isPlaceholder(next)) {
        malformed(
          source,
          `${part.text}${next.text} need some text between them (e.g. ':'), or keys would be ambiguous`,
        );
      }
      if (typeof next === 'string' && isPlaceholder(parts[index + 2])) {
        if (next.includes('%')) malformed(source, `'%' escapes placeholder values, it cannot separate placeholders`);
        escaped.add(String.fromCodePoint(next.codePointAt(0) as number));
      }
    });
    if (typeof parts[0] === 'string' && isLeaderKey(parts[0])) {
      // Every key it renders would be refused at each call: refused once, as the class loads.
      malformed(source, `keys starting with "${LEADER_KEY_PREFIX}" belong to leaderships (@Leader, LockService.lead)`);
    }
    if (placeholders.length === 0) {
      // A constant key: check it now rather than on every call.
      try {
        normalizeKeys(source);
      } catch (error) {
        throw new LockOptionsError('@Locked key', source, (error as Error).message);
      }
    }
    return new KeyTemplate(source, parts, escapingPattern(escaped));
  }

  get placeholders(): readonly KeyPlaceholder[] {
    return this.parts.filter(isPlaceholder);
  }

  get kind(): KeySourceKind {
    return this.placeholders[0]?.kind ?? 'none';
  }

  /** The key for one call. InvalidLockKeyError, naming the placeholder, when a value is not usable. */
  render(source: LockKeySource): string {
    let key = '';
    for (const part of this.parts) {
      if (typeof part === 'string') key += part;
      else key += this.encode(textOf(lookUp(source, part), part, this.source));
    }
    return key;
  }

  /** Percent-encodes the characters this template escapes (see the header comment). */
  private encode(value: string): string {
    return value.replace(this.escaped, percentEncode);
  }
}

/** Parses what @Locked got as its key: a template, an array of templates, or a key function. */
export function compileLockKey(key: unknown): CompiledLockKey {
  if (typeof key === 'function') {
    const keyFunction = key as LockKeyFunction;
    return {
      kind: 'none',
      description: 'a key function',
      placeholders: [],
      build: (source) => normalizeKeys(keyFunction(source)),
    };
  }
  if (typeof key === 'string') {
    const template = KeyTemplate.parse(key);
    return {
      kind: template.kind,
      description: JSON.stringify(key),
      placeholders: template.placeholders,
      build: (source) => normalizeKeys(template.render(source)),
    };
  }
  if (Array.isArray(key)) {
    if (key.length === 0) throw new LockOptionsError('@Locked key', key, 'at least one key template');
    const templates = key.map((item: unknown) => {
      if (typeof item !== 'string') {
        throw new LockOptionsError('@Locked key', item, 'key templates (strings) in the array');
      }
      return KeyTemplate.parse(item);
    });
    const kinds = new Set(templates.map((template) => template.kind).filter((kind) => kind !== 'none'));
    if (kinds.size > 1) {
      throw new LockOptionsError(
        '@Locked key',
        key,
        'templates that all read the same source: argument placeholders ({0}) or request placeholders ({params.id})',
      );
    }
    return {
      kind: [...kinds][0] ?? 'none',
      description: JSON.stringify(key),
      placeholders: templates.flatMap((template) => template.placeholders),
      build: (source) => normalizeKeys(templates.map((template) => template.render(source))),
    };
  }
  throw new LockOptionsError('@Locked key', key, 'a key template, an array of key templates, or a key function');
}

function parsePlaceholder(source: string, inner: string): KeyPlaceholder {
  const text = `{${inner}}`;
  if (inner.length === 0) malformed(source, 'it has an empty placeholder {}');
  const segments = inner.split('.');
  for (const segment of segments) {
    if (!SEGMENT.test(segment)) {
      malformed(
        source,
        `placeholder ${text} has ${segment ? `an invalid part "${segment}"` : 'an empty part'}: ` +
          `use letters, digits, '_', '$' or '-' between dots`,
      );
    }
  }
  const [root, ...path] = segments;
  if (ARGUMENT_INDEX.test(root)) return { text, root, path, kind: 'argument' };
  if ((ROUTE_KEY_ROOTS as readonly string[]).includes(root)) {
    // Node (and every Nest HTTP adapter) exposes header names lower-cased.
    return { text, root, path: root === 'headers' ? path.map((name) => name.toLowerCase()) : path, kind: 'route' };
  }
  return malformed(
    source,
    `placeholder ${text} starts with "${root}"; a placeholder starts with ` +
      `${ROUTE_KEY_ROOTS.join(', ')} (route handlers) or an argument index such as 0 (provider methods)`,
  );
}

function lookUp(source: LockKeySource, placeholder: KeyPlaceholder): unknown {
  let value: unknown =
    placeholder.kind === 'argument' ? source.args[Number(placeholder.root)] : source[placeholder.root as RouteKeyRoot];
  for (const name of placeholder.path) {
    if (typeof value !== 'object' || value === null) return undefined;
    value = (value as Record<string, unknown>)[name];
  }
  return value;
}

/** A placeholder's value as key text, or InvalidLockKeyError: never a lock on "undefined" or "[object Object]". */
function textOf(value: unknown, placeholder: KeyPlaceholder, template: string): string {
  const reject = (what: string): never => {
    throw new InvalidLockKeyError(
      template,
      `placeholder ${placeholder.text} ${what}; it must be a non-empty string, a finite number or a boolean`,
    );
  };
  switch (typeof value) {
    case 'string':
      if (value.length === 0) return reject('is an empty string');
      if (LONE_SURROGATE.test(value)) return reject('is not well-formed Unicode (a lone surrogate)');
      return value;
    case 'number':
      return Number.isFinite(value) ? String(value) : reject(`is ${value}`);
    case 'bigint':
    case 'boolean':
      return String(value);
    case 'undefined':
      return reject('is undefined (missing from the call)');
    case 'object':
      return reject(value === null ? 'is null' : Array.isArray(value) ? 'is an array' : 'is an object');
    default:
      return reject(`is a ${typeof value}`);
  }
}

function escapingPattern(characters: ReadonlySet<string>): RegExp {
  const listed = [...characters].map((char) => `\\u{${(char.codePointAt(0) as number).toString(16)}}`).join('');
  return new RegExp(`[\\u{0}-\\u{20}\\u{7f}${listed}]`, 'gu');
}

function percentEncode(char: string): string {
  let encoded = '';
  for (const byte of Buffer.from(char, 'utf8')) encoded += `%${byte.toString(16).toUpperCase().padStart(2, '0')}`;
  return encoded;
}

function isPlaceholder(part: unknown): part is KeyPlaceholder {
  return typeof part === 'object' && part !== null;
}

function malformed(template: string, problem: string): never {
  throw new LockOptionsError('@Locked key', template, `a well-formed key template (${problem})`);
}
