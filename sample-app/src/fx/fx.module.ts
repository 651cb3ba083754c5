import { Module } from '@nestjs/common';
import { FX_PROVIDER, simulatedFxProvider } from './fx-provider';
import { FxController } from './fx.controller';
import { FxRatesService } from './fx-rates.service';

@Module({
  controllers: [FxController],
  providers: [FxRatesService, { provide: FX_PROVIDER, useValue: simulatedFxProvider }],
})
export class FxModule {}
