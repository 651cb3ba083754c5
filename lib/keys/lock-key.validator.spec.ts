import { InvalidLockKeyError } from '../errors';
import { MAX_KEY_LENGTH } from '../lock.constants';
import { normalizeKeys } from './lock-key.validator';

describe('normalizeKeys', () => {
  it.each([
    ['empty string', ''],
    ['number', 42],
    ['undefined', undefined],
    ['null', null],
    ['object', { id: 1 }],
    ['empty array', []],
    ['array with a number', ['a', 1]],
    ['array with an empty string', ['a', '']],
    ['too long', 'x'.repeat(MAX_KEY_LENGTH + 1)],
  ])('rejects %s with InvalidLockKeyError', (_, key) => {
    expect(() => normalizeKeys(key)).toThrow(InvalidLockKeyError);
  });

  it('accepts a string, an array, the maximum length, and drops duplicates keeping order', () => {
    expect(normalizeKeys('a')).toEqual(['a']);
    expect(normalizeKeys(['b', 'a', 'b'])).toEqual(['b', 'a']);
    expect(normalizeKeys('x'.repeat(MAX_KEY_LENGTH))).toHaveLength(1);
  });
});
