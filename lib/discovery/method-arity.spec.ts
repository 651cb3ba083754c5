/* eslint-disable @typescript-eslint/no-unused-vars -- the fixtures' parameters are what is counted */
import { declaredArity } from './method-arity';

class Sample {
  none() {}
  two(a: string, b: string) {}
  defaults(a: string, b = 'x', c = { d: [1, 2] }) {}
  rest(a: string, ...others: string[]) {}
  destructured({ a, b }: { a: string; b: string }, [c, d]: string[]) {}
  destructuredRest({ a, ...others }: Record<string, string>, b: number) {}
  tricky(a = 'x,)(', b = `y${'(' + ','}z`, /* c, */ d = (e: number) => e, f = [')', ',']) {}
  trailingComma(
    a: string,
    b: string, // a comment, with a comma
  ) {}
  usesArguments(a: string) {
    return arguments.length;
  }
  async asyncMethod(a: string, b: string) {}
  *generator(a: string) {}
  ['computed'.toUpperCase()](a: string, b: string) {}
}

const method = (name: string) => (Sample.prototype as unknown as Record<string, Function>)[name];

describe('declaredArity', () => {
  it('counts the parameters a method declares', () => {
    expect(declaredArity(method('none'))).toBe(0);
    expect(declaredArity(method('two'))).toBe(2);
    expect(declaredArity(method('asyncMethod'))).toBe(2);
    expect(declaredArity(method('generator'))).toBe(1);
    expect(declaredArity(method('COMPUTED'))).toBe(2);
  });

  it('counts parameters with default values, which Function.length stops at', () => {
    expect(method('defaults').length).toBe(1);
    expect(declaredArity(method('defaults'))).toBe(3);
  });

  it('counts destructured parameters once each, an object rest inside one included', () => {
    expect(declaredArity(method('destructured'))).toBe(2);
    expect(declaredArity(method('destructuredRest'))).toBe(2);
  });

  it('is not misled by commas and brackets in strings, templates, comments and default functions', () => {
    expect(declaredArity(method('tricky'))).toBe(4);
    expect(declaredArity(method('trailingComma'))).toBe(2);
  });

  it('is unknown for a rest parameter or a method that reads arguments', () => {
    expect(declaredArity(method('rest'))).toBeUndefined();
    expect(declaredArity(method('usesArguments'))).toBeUndefined();
  });

  it('reads plain functions and arrow functions', () => {
    expect(declaredArity(function (a: string, b: string, c: string) {})).toBe(3);
    expect(declaredArity((a: string) => a)).toBe(1);
    expect(declaredArity(async (a: string, b: string) => a + b)).toBe(2);
    expect(declaredArity((...all: string[]) => all)).toBeUndefined();
  });

  it('is unknown for a function whose source is not readable (bound, native)', () => {
    expect(declaredArity(method('two').bind(new Sample()))).toBeUndefined();
    expect(declaredArity(Math.max)).toBeUndefined();
  });

  it('takes design:paramtypes as a floor when it counts more', () => {
    expect(declaredArity(method('two'), [String, String, Number])).toBe(3);
    expect(declaredArity(method('two'), [String])).toBe(2);
    expect(declaredArity(method('rest'), [String, Array])).toBeUndefined();
  });
});
