import { Matches } from 'class-validator';

/** Route parameters naming a currency (ISO 4217 code). */
export class CurrencyParams {
  @Matches(/^[A-Z]{3}$/, { message: 'currency must be an ISO 4217 code of 3 capital letters, e.g. EUR' })
  currency!: string;
}
