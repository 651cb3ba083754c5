/** What GET /reports/:id returns: the result of an expensive computation, cached for a while. */
export interface AccountReport {
  readonly accountId: string;
  readonly balance: number;
  /** The balance after a year of interest at the configured rate (12 runs, compounded). */
  readonly projectedBalance: number;
  readonly computedAt: string;
  /** The instance that computed it (`port 3001, pid 1234`). */
  readonly computedBy: string;
  /** Random id of the computation: every request served from it shows the same id. */
  readonly computationId: string;
}
