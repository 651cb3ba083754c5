// Spec: which servers take batches of script calls, and what a refused batch's calls do.
import { batchRefusal, fitsBatches } from './batch-fit';

describe('fitsBatches (from the ready check INFO)', () => {
  it.each([
    ['Redis standalone (a Sentinel-managed master too)', { redis_mode: 'standalone', cluster_enabled: '0' }, true],
    ['Valkey 8 (server_mode)', { server_mode: 'standalone', cluster_enabled: '0' }, true],
    ['a Redis in cluster mode', { redis_mode: 'cluster', cluster_enabled: '1' }, false],
    ['standalone but cluster_enabled:1', { redis_mode: 'standalone', cluster_enabled: '1' }, false],
    ['a Sentinel process', { redis_mode: 'sentinel' }, false],
    ['no cluster section', { redis_mode: 'standalone' }, false],
    ['INFO refused (ioredis passes {})', {}, false],
  ])('%s', (_title, info, fits) => {
    expect(fitsBatches(info)).toBe(fits);
  });
});

describe('batchRefusal (a batch refused as a whole)', () => {
  it.each([
    ['NOSCRIPT No matching script. Please use EVAL.', 'send-each'],
    ["CROSSSLOT Keys in request don't hash to the same slot", 'send-each-and-stop-batching'],
    ['MOVED 3999 127.0.0.1:6381', 'send-each-and-stop-batching'],
    ['ASK 3999 127.0.0.1:6381', 'send-each-and-stop-batching'],
    ['BUSY Redis is busy running a script.', 'fail-each'],
    ['Connection is closed.', 'fail-each'],
  ])('%s', (message, refusal) => {
    expect(batchRefusal(new Error(message))).toBe(refusal);
  });
});
