import { LockOptionsError } from '../errors';
import { resolveCallSettings } from './call-settings';
import type { AcquireOptions } from './lock-options.interface';
import { resolveLockOptions } from './module-options.resolver';

describe('resolveCallSettings', () => {
  const module = resolveLockOptions({});

  it('lets the call override the module and validates it', () => {
    expect(resolveCallSettings(module, { ttl: 50, wait: 0 })).toMatchObject({ ttl: 50, wait: 0, reentrant: true });
    expect(() => resolveCallSettings(module, { ttl: -1 })).toThrow(LockOptionsError);
    expect(() => resolveCallSettings(module, { signal: {} as AbortSignal })).toThrow(LockOptionsError);
  });

  it('refuses an option AcquireOptions does not have, as the module options do (before: ignored)', () => {
    const misspelt = { tll: 100 } as AcquireOptions;
    expect(() => resolveCallSettings(module, misspelt)).toThrow(LockOptionsError);
    expect(() => resolveCallSettings(module, misspelt)).toThrow(/'tll': 100.*one of the options: ttl, wait/);
    expect(resolveCallSettings(module, { ttl: 100, label: 'x', signal: undefined }).ttl).toBe(100);
  });

  it("holds a call's ttl to 3 × the module's minReplicas.timeout (a renewal may wait that long)", () => {
    const replicated = resolveLockOptions({ redis: 'redis://127.0.0.1:1', minReplicas: { replicas: 1, timeout: 400 } });
    expect(() => resolveCallSettings(replicated, { ttl: 1_000 })).toThrow(
      /'ttl'.*at least 3 × minReplicas.timeout \(400 ms\)/,
    );
    expect(resolveCallSettings(replicated, { ttl: 1_200 }).ttl).toBe(1_200);
    expect(resolveCallSettings(module, { ttl: 1_000 }).ttl).toBe(1_000);
  });

  it('holds minHold to maxHold on the merged settings: the call against the module and the other way round', () => {
    const capped = resolveLockOptions({ maxHold: 60_000 });
    expect(() => resolveCallSettings(capped, { minHold: 90_000 })).toThrow(/'minHold'.*at most maxHold \(60000 ms\)/);
    expect(() => resolveCallSettings(resolveLockOptions({ minHold: 90_000 }), { maxHold: 30_000 })).toThrow(
      LockOptionsError,
    );
    expect(resolveCallSettings(capped, { minHold: 60_000 })).toMatchObject({ minHold: 60_000, maxHold: 60_000 });
    // minHold beyond the ttl is fine: the lease is renewed (or, released early, left to expire at grant + minHold).
    expect(resolveCallSettings(module, { ttl: 1_000, minHold: 50_000 })).toMatchObject({ ttl: 1_000, minHold: 50_000 });
  });
});
