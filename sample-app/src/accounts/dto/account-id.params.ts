import { Matches } from 'class-validator';
import { ACCOUNT_ID_PATTERN } from '../account';

/** Route parameters naming an account. */
export class AccountIdParams {
  @Matches(ACCOUNT_ID_PATTERN, { message: 'id must be 1 to 64 letters, digits, "_" or "-"' })
  id!: string;
}
