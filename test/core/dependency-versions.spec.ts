import commonPackage from '@nestjs/common/package.json';
import corePackage from '@nestjs/core/package.json';
import ioredisPackage from 'ioredis/package.json';

/**
 * Which NestJS and ioredis the suites actually ran on: the current majors by default, an older set under
 * LOCK_MATRIX (npm run test:matrix). Guards the matrix against silently testing the default versions.
 */
const EXPECTED: Record<string, { nest: number; ioredis: number }> = {
  default: { nest: 12, ioredis: 6 },
  nest10: { nest: 10, ioredis: 5 },
  nest11: { nest: 11, ioredis: 5 },
};

function major(version: string): number {
  return Number(version.split('.')[0]);
}

describe('dependency versions under test', () => {
  const entry = process.env.LOCK_MATRIX ?? 'default';

  it(`are the ${entry} set`, () => {
    const expected = EXPECTED[entry];
    expect(expected).toBeDefined();
    expect(major(commonPackage.version)).toBe(expected.nest);
    expect(major(corePackage.version)).toBe(expected.nest);
    expect(major(ioredisPackage.version)).toBe(expected.ioredis);
  });
});
