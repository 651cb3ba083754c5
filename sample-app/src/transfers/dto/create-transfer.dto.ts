import { IsInt, IsPositive, IsString, Matches, Max } from 'class-validator';
import { ACCOUNT_ID_PATTERN } from '../../accounts/account';
import { DiffersFrom } from '../../common/differs-from.decorator';

/** Body of POST /transfers. Amounts are integers in cents. */
export class CreateTransferDto {
  @IsString()
  @Matches(ACCOUNT_ID_PATTERN, { message: 'from must be 1 to 64 letters, digits, "_" or "-"' })
  from!: string;

  @IsString()
  @Matches(ACCOUNT_ID_PATTERN, { message: 'to must be 1 to 64 letters, digits, "_" or "-"' })
  @DiffersFrom('from')
  to!: string;

  @IsInt()
  @IsPositive()
  @Max(Number.MAX_SAFE_INTEGER / 2)
  amount!: number;
}
