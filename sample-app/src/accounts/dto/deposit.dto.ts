import { IsInt, IsPositive, Max } from 'class-validator';

/** Body of POST /accounts/:id/deposit. Amounts are integers in cents. */
export class DepositDto {
  @IsInt()
  @IsPositive()
  @Max(Number.MAX_SAFE_INTEGER / 2)
  amount!: number;
}
