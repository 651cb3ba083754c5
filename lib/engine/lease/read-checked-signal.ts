/**
 * An AbortSignal whose readers see a loss the moment it can be known, not only once a timer has run. A holder
 * thawed from a pause past its lease (SIGSTOP, a stopped VM, a blocked event loop) may run its own code before
 * the lease's validity timer fires: `aborted`, `reason` and `throwIfAborted()` first ask `check` (which aborts
 * the signal when the validity has ended), then answer as AbortSignal does. Listeners still learn of it when
 * the signal aborts, by timer or by such a read.
 */

// The prototype's own getters, called with a signal as `this` below.
/* eslint-disable @typescript-eslint/unbound-method */
const NATIVE_ABORTED = Object.getOwnPropertyDescriptor(AbortSignal.prototype, 'aborted')?.get;
const NATIVE_REASON = Object.getOwnPropertyDescriptor(AbortSignal.prototype, 'reason')?.get;
/* eslint-enable @typescript-eslint/unbound-method */

export function checkedOnRead(signal: AbortSignal, check: () => void): AbortSignal {
  // A runtime whose AbortSignal is shaped otherwise keeps the plain signal (aborted by the timer only).
  if (!NATIVE_ABORTED || !NATIVE_REASON) return signal;
  const aborted = NATIVE_ABORTED;
  const reason = NATIVE_REASON;
  Object.defineProperties(signal, {
    aborted: {
      get: (): boolean => {
        if (!aborted.call(signal)) check();
        return aborted.call(signal) as boolean;
      },
      configurable: true,
    },
    reason: {
      get: (): unknown => {
        if (!aborted.call(signal)) check();
        return reason.call(signal);
      },
      configurable: true,
    },
    throwIfAborted: {
      value: (): void => {
        if (!aborted.call(signal)) check();
        AbortSignal.prototype.throwIfAborted.call(signal);
      },
      configurable: true,
      writable: true,
    },
  });
  return signal;
}
