import { Inject, Injectable } from '@nestjs/common';
import { Locked } from '../../../lib';
import { FX_PROVIDER, FX_PROVIDER_MAX_CONCURRENT_CALLS, type FxQuote, type SimulatedFxProvider } from './fx-provider';

/**
 * The bank's client of the FX provider. The provider refuses a call beyond its quota of concurrent calls
 * per API key, and every instance of the bank shares the key: a counting semaphore over all instances
 * keeps the calls in flight within the quota, and queues the rest (woken as permits come back, no polling)
 * instead of letting the provider refuse them.
 */
@Injectable()
export class FxRatesService {
  constructor(@Inject(FX_PROVIDER) private readonly provider: SimulatedFxProvider) {}

  /** At most FX_PROVIDER_MAX_CONCURRENT_CALLS calls in flight across the cluster; a caller waits up to 10 s. */
  @Locked('fx-provider', { limit: FX_PROVIDER_MAX_CONCURRENT_CALLS, wait: 10_000 })
  quote(currency: string): Promise<FxQuote> {
    return this.provider.quote(currency);
  }
}
