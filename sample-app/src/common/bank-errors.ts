/** Domain errors of the bank. BankErrorsFilter maps them to HTTP statuses at the edge. */
export abstract class BankError extends Error {
  constructor(message: string) {
    super(message);
    this.name = new.target.name;
  }
}

/** 404 */
export class AccountNotFoundError extends BankError {
  constructor(readonly accountId: string) {
    super(`Account ${accountId} does not exist (deposit into it to open it)`);
  }
}

/** 422: the transfer would leave the source account below zero. */
export class InsufficientFundsError extends BankError {
  constructor(
    readonly accountId: string,
    readonly balance: number,
    readonly amount: number,
  ) {
    super(`Insufficient funds: account ${accountId} has ${balance}, the transfer needs ${amount}`);
  }
}

/**
 * 409: a write carried a fencing token older than one already written for the account. Its writer's lock
 * had expired and been granted to another writer since, so its view of the balance is out of date.
 */
export class StaleFenceError extends BankError {
  constructor(
    readonly accountId: string,
    readonly fence: number,
    readonly lastFence: number,
  ) {
    super(
      `Write to account ${accountId} refused: its lock fence ${fence} is older than the last written fence ` +
        `${lastFence} (the lock was lost while the request ran); retry the request`,
    );
  }
}

/** 404: the FX provider quotes no such currency. */
export class UnknownCurrencyError extends BankError {
  constructor(readonly currency: string) {
    super(`The FX provider has no rate for ${currency}`);
  }
}

/** 502: the FX provider refused the call (over its quota of concurrent calls). */
export class FxProviderRefusedError extends BankError {
  constructor(reason: string) {
    super(`The FX provider refused the call: ${reason}`);
  }
}
