import { Logger } from '@nestjs/common';
import { resolveLockOptions } from '../options/module-options.resolver';
import { createLockStore } from './lock-store.factory';

describe('createLockStore', () => {
  afterEach(() => vi.restoreAllMocks());

  it('warns that Redlock over 2 nodes tolerates no node down; 3 nodes are not warned about', async () => {
    const warn = vi.spyOn(Logger.prototype, 'warn').mockImplementation(() => undefined);
    const two = createLockStore(resolveLockOptions({ nodes: ['redis://127.0.0.1:7001', 'redis://127.0.0.1:7002'] }));
    expect(warn.mock.calls.map(([message]) => String(message))).toEqual([
      expect.stringContaining('Redlock over 2 nodes'),
    ]);
    warn.mockClear();
    const three = createLockStore(
      resolveLockOptions({ nodes: ['redis://127.0.0.1:7001', 'redis://127.0.0.1:7002', 'redis://127.0.0.1:7003'] }),
    );
    expect(warn).not.toHaveBeenCalled();
    await Promise.all([two.close(), three.close()]);
  });
});
