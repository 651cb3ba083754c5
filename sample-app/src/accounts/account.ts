/** An account as the API shows it. Amounts are integers in the smallest unit (cents): no float drift. */
export interface Account {
  readonly id: string;
  readonly balance: number;
}

/**
 * Account ids are short and plain, so that the lock key the @Locked templates build from them
 * (`account:{params.id}`) is exactly `account:<id>`: the templates percent-encode other characters.
 */
export const ACCOUNT_ID_PATTERN = /^[A-Za-z0-9_-]{1,64}$/;

/** The lock that guards one account's balance. Every writer of a balance holds it. */
export function accountLockKey(id: string): string {
  return `account:${id}`;
}
