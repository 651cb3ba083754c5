import { Controller, Get, Param } from '@nestjs/common';
import { CurrencyParams } from './dto/currency.params';
import type { FxQuote } from './fx-provider';
import { FxRatesService } from './fx-rates.service';

@Controller('fx')
export class FxController {
  constructor(private readonly rates: FxRatesService) {}

  /** The provider's quote; the call is held to the provider's quota by the semaphore in FxRatesService. */
  @Get(':currency')
  quote(@Param() { currency }: CurrencyParams): Promise<FxQuote> {
    return this.rates.quote(currency);
  }
}
