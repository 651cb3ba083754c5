import { InvalidLockKeyError, LockOptionsError } from '../errors';
import type { LockKeySource } from '../lock.interface';
import { compileLockKey, KeyTemplate } from './key-template';

const call = (...args: unknown[]): LockKeySource => ({ args });
const request = (parts: Omit<LockKeySource, 'args'>): LockKeySource => ({ args: [], ...parts });

describe('KeyTemplate', () => {
  describe('rendering', () => {
    it('reads argument placeholders, nested paths included', () => {
      const template = KeyTemplate.parse('transfer:{0}:{1.account.id}');
      expect(template.kind).toBe('argument');
      expect(template.render(call('eur', { account: { id: 'acc-7' } }))).toBe('transfer:eur:acc-7');
    });

    it('reads request placeholders: params, query, body paths, headers, user, data', () => {
      const template = KeyTemplate.parse('{params.id}/{query.page}/{body.a.b}/{headers.x-tenant}/{user.id}/{data.n}');
      expect(template.kind).toBe('route');
      const key = template.render(
        request({
          params: { id: 'o1' },
          query: { page: '2' },
          body: { a: { b: 'deep' } },
          headers: { 'x-tenant': 'acme' },
          user: { id: 42 },
          data: { n: true },
        }),
      );
      expect(key).toBe('o1/2/deep/acme/42/true');
    });

    it('matches header names case-insensitively (Node lower-cases them)', () => {
      expect(KeyTemplate.parse('t:{headers.X-Tenant}').render(request({ headers: { 'x-tenant': 'acme' } }))).toBe(
        't:acme',
      );
    });

    it('writes numbers, bigints and booleans as text, so 7 and "7" name the same lock', () => {
      const template = KeyTemplate.parse('n:{0}');
      expect(template.render(call(7))).toBe('n:7');
      expect(template.render(call('7'))).toBe('n:7');
      expect(template.render(call(-1.5))).toBe('n:-1.5');
      expect(template.render(call(12345678901234567890n))).toBe('n:12345678901234567890');
      expect(template.render(call(false))).toBe('n:false');
    });

    it('indexes arrays by position in a path', () => {
      expect(KeyTemplate.parse('i:{0.items.1}').render(call({ items: ['a', 'b'] }))).toBe('i:b');
    });

    it('keeps literal text as written', () => {
      expect(KeyTemplate.parse('plain:key').render(call())).toBe('plain:key');
      expect(KeyTemplate.parse('a:{0}:z').render(call('m'))).toBe('a:m:z');
    });
  });

  describe('encoding of values', () => {
    const encodeOne = (value: string): string => KeyTemplate.parse('{0}').render(call(value));

    it('escapes the separator, the braces and the escape character itself', () => {
      expect(encodeOne('a:b')).toBe('a%3Ab');
      expect(encodeOne('{tag}')).toBe('%7Btag%7D');
      expect(encodeOne('100%')).toBe('100%25');
      expect(encodeOne('%3A')).toBe('%253A');
    });

    it('escapes controls and spaces, and leaves other characters (unicode included) as they are', () => {
      expect(encodeOne('a b\n')).toBe('a%20b%0A');
      expect(encodeOne('naïve-名前_😀.~')).toBe('naïve-名前_😀.~');
    });

    it('does not let a value end early: ("a:b", "c") and ("a", "b:c") differ', () => {
      const template = KeyTemplate.parse('{0}:{1}');
      expect(template.render(call('a:b', 'c'))).toBe('a%3Ab:c');
      expect(template.render(call('a', 'b:c'))).toBe('a:b%3Ac');
    });

    it('escapes the first character of any text between placeholders', () => {
      const template = KeyTemplate.parse('{0}-{1}');
      expect(template.render(call('a-b', 'c'))).not.toBe(template.render(call('a', 'b-c')));
      expect(template.render(call('a-b', 'c'))).toBe('a%2Db-c');
    });

    // Every pair (or triple) of short values over an alphabet of separators, the escape character and hex
    // digits (so that values can look like escapes): no two inputs may give one key.
    const alphabet = ['a', 'A', '3', ':', '%', '-', ' '];
    const strings = (maxLength: number): string[] => {
      let level = [''];
      const all: string[] = [];
      for (let length = 1; length <= maxLength; length++) {
        level = level.flatMap((prefix) => alphabet.map((char) => prefix + char));
        all.push(...level);
      }
      return all;
    };
    /** Inputs whose key was already built from another input (checked without expect() per input: speed). */
    const collisions = (source: string, inputs: readonly string[][]): string[] => {
      const template = KeyTemplate.parse(source);
      const seen = new Map<string, string[]>();
      const found: string[] = [];
      for (const input of inputs) {
        const key = template.render(call(...input));
        const earlier = seen.get(key);
        if (earlier) found.push(`${JSON.stringify(earlier)} and ${JSON.stringify(input)} both give ${key}`);
        seen.set(key, input);
      }
      return found;
    };

    it('reports a collision when there is one (the check itself works)', () => {
      expect(collisions('{0}', [['a'], ['b'], ['a']])).toEqual(['["a"] and ["a"] both give a']);
    });

    it.each(['{0}:{1}', '{0}-{1}', '{0}A{1}', '{0}3{1}', 'k:{0}::{1}:', '{0}:x{1}', '{0} {1}'])(
      'is injective for %s',
      (source) => {
        const values = strings(3);
        expect(
          collisions(
            source,
            values.flatMap((first) => values.map((second) => [first, second])),
          ),
        ).toEqual([]);
      },
    );

    it('is injective for three placeholders', () => {
      const values = strings(2);
      const inputs = values.flatMap((first) =>
        values.flatMap((second) => values.map((third) => [first, second, third])),
      );
      expect(collisions('{0}:{1}/{2}', inputs)).toEqual([]);
    });
  });

  describe('values that cannot name a lock', () => {
    const template = KeyTemplate.parse('order:{0.id}');

    it.each([
      ['undefined', {}, /\{0\.id\} is undefined/],
      ['null', { id: null }, /\{0\.id\} is null/],
      ['an empty string', { id: '' }, /\{0\.id\} is an empty string/],
      ['an object', { id: { nested: 1 } }, /\{0\.id\} is an object/],
      ['an array', { id: [1] }, /\{0\.id\} is an array/],
      ['NaN', { id: Number.NaN }, /\{0\.id\} is NaN/],
      ['a function', { id: () => 1 }, /\{0\.id\} is a function/],
      ['a lone surrogate', { id: 'a\uD800' }, /well-formed/],
    ])('rejects %s with InvalidLockKeyError naming the placeholder', (_what, argument, message) => {
      const attempt = () => template.render(call(argument));
      expect(attempt).toThrow(InvalidLockKeyError);
      expect(attempt).toThrow(message);
    });

    it('rejects a path through a missing or primitive value', () => {
      expect(() => template.render(call())).toThrow(/\{0\.id\} is undefined/);
      expect(() => template.render(call('a string'))).toThrow(/\{0\.id\} is undefined/);
      expect(() => KeyTemplate.parse('{params.id}').render(request({}))).toThrow(/\{params\.id\} is undefined/);
    });
  });

  describe('malformed templates fail with LockOptionsError', () => {
    it.each([
      ['', /non-empty/],
      ['order:{params.id', /never closed/],
      ['order:params.id}', /closes no/],
      ['order:{}', /empty placeholder/],
      ['order:{params..id}', /empty part/],
      ['order:{params.i d}', /invalid part "i d"/],
      ['order:{a{b}}', /not closed before the next/],
      ['order:{request.id}', /starts with "request"/],
      ['order:{01}', /starts with "01"/],
      ['{0}{1}', /need some text between them/],
      ['{0}%{1}', /'%' escapes placeholder values/],
      ['{0}:{params.id}', /mixes/],
    ])('%j', (source, message) => {
      const attempt = () => KeyTemplate.parse(source);
      expect(attempt).toThrow(LockOptionsError);
      expect(attempt).toThrow(message);
    });

    it('accepts "%" around a single placeholder (the prefix and suffix are fixed)', () => {
      expect(KeyTemplate.parse('50%:{0}%').render(call('a%'))).toBe('50%:a%25%');
    });
  });
});

describe('compileLockKey', () => {
  it('builds the lock names of a template', () => {
    const key = compileLockKey('work:{0}');
    expect(key.kind).toBe('argument');
    expect(key.build(call(3))).toEqual(['work:3']);
  });

  it('builds every key of an array (deduplicated by normalizeKeys)', () => {
    const key = compileLockKey(['account:{body.from}', 'account:{body.to}']);
    expect(key.kind).toBe('route');
    expect(key.build(request({ body: { from: 'A', to: 'B' } }))).toEqual(['account:A', 'account:B']);
    expect(key.build(request({ body: { from: 'A', to: 'A' } }))).toEqual(['account:A']);
  });

  it('lists the placeholders of every template, and none for a key function', () => {
    expect(
      compileLockKey(['shop:{params.shopId}', 'order:{params.id}:{body.a.b}']).placeholders.map((p) => p.text),
    ).toEqual(['{params.shopId}', '{params.id}', '{body.a.b}']);
    expect(compileLockKey('job:{1.id}').placeholders).toEqual([
      { text: '{1.id}', root: '1', path: ['id'], kind: 'argument' },
    ]);
    expect(compileLockKey('constant').placeholders).toEqual([]);
    expect(compileLockKey(() => 'key').placeholders).toEqual([]);
  });

  it('fails the whole array when one template has no value', () => {
    const key = compileLockKey(['account:{0}', 'account:{1}']);
    expect(() => key.build(call('A'))).toThrow(/\{1\} is undefined/);
  });

  it('mixes constant keys with templates of one kind, but not argument and request templates', () => {
    expect(compileLockKey(['global', 'item:{0}']).kind).toBe('argument');
    expect(() => compileLockKey(['item:{0}', 'item:{params.id}'])).toThrow(LockOptionsError);
  });

  it('calls a key function with the source and validates what it returns', () => {
    const key = compileLockKey((source: LockKeySource) => `job:${String(source.args[0])}`);
    expect(key.kind).toBe('none');
    expect(key.build(call('nightly'))).toEqual(['job:nightly']);
    const empty = compileLockKey(() => '');
    expect(() => empty.build(call())).toThrow(InvalidLockKeyError);
  });

  it.each([[[]], [42], [null], [['ok', 7]]])('rejects %j as a key', (key) => {
    expect(() => compileLockKey(key)).toThrow(LockOptionsError);
  });
});
