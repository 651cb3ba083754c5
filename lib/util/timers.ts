/**
 * The longest delay setTimeout honours (2^31 - 1 ms, about 24.8 days): Node fires a longer one after 1 ms, and
 * warns. A timer meant for later is armed in steps of at most this.
 */
export const MAX_TIMER_DELAY_MS = 2_147_483_647;
