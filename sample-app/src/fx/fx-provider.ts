import { setTimeout as sleep } from 'node:timers/promises';
import { FxProviderRefusedError, UnknownCurrencyError } from '../common/bank-errors';

/** Injection token of the FX provider the bank calls out to. */
export const FX_PROVIDER = 'BANK:FX_PROVIDER';

/** The provider's contract: at most this many calls in flight per API key, all instances together. */
export const FX_PROVIDER_MAX_CONCURRENT_CALLS = 2;

/** How long one call to the provider takes. */
export const FX_PROVIDER_LATENCY_MS = 100;

/** What the provider answers: how many units of `currency` one US dollar buys. */
export interface FxQuote {
  readonly currency: string;
  readonly perUsd: number;
  readonly quotedAt: string;
}

/** Mid-market rates the stand-in quotes (per US dollar). */
const RATES: Readonly<Record<string, number>> = { EUR: 0.92, GBP: 0.79, CHF: 0.88, JPY: 151.2, CAD: 1.37 };

/**
 * A stand-in for a third-party FX-rates API with a strict concurrency quota, like many paid APIs: one call
 * more than FX_PROVIDER_MAX_CONCURRENT_CALLS in flight is refused (their 429), not queued. It counts what
 * it sees so that the tests can check the quota was kept.
 *
 * One object per process stands for the one remote service: two app instances in one process (the tests)
 * call the same one, as instances on several machines would call the same API.
 */
export class SimulatedFxProvider {
  private inFlight = 0;
  private highest = 0;
  private refused = 0;
  private answered = 0;

  /** The most calls it has had in flight at once, and how many it refused and answered. */
  get stats(): { readonly mostInFlight: number; readonly refused: number; readonly answered: number } {
    return { mostInFlight: this.highest, refused: this.refused, answered: this.answered };
  }

  /** Forgets the counts (between tests). */
  resetStats(): void {
    this.highest = this.inFlight;
    this.refused = 0;
    this.answered = 0;
  }

  async quote(currency: string): Promise<FxQuote> {
    if (this.inFlight >= FX_PROVIDER_MAX_CONCURRENT_CALLS) {
      this.refused++;
      throw new FxProviderRefusedError(`too many concurrent calls (its limit is ${FX_PROVIDER_MAX_CONCURRENT_CALLS})`);
    }
    this.inFlight++;
    this.highest = Math.max(this.highest, this.inFlight);
    try {
      await sleep(FX_PROVIDER_LATENCY_MS);
      const perUsd = RATES[currency];
      if (perUsd === undefined) throw new UnknownCurrencyError(currency);
      this.answered++;
      return { currency, perUsd, quotedAt: new Date().toISOString() };
    } finally {
      this.inFlight--;
    }
  }
}

/** The process's one stand-in provider (see SimulatedFxProvider). */
export const simulatedFxProvider = new SimulatedFxProvider();
