import { leaseValue, parseLeaseValue } from './lease-owner';

describe('lease owner in the lease value', () => {
  it('round-trips the token and any instance name, separators included', () => {
    const token = '0123456789abcdef0123456789abcdef';
    expect(leaseValue(token, 'pod-7')).toBe(`${token}|pod-7`);
    expect(parseLeaseValue(leaseValue(token, 'eu|west|pod-7'))).toEqual({ token, instance: 'eu|west|pod-7' });
  });

  it('reads a bare token (written without an owner) as instance "unknown"', () => {
    expect(parseLeaseValue('abc')).toEqual({ token: 'abc', instance: 'unknown' });
  });
});
