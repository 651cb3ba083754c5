import vm from 'node:vm';

/**
 * The Node process object itself. Inside a Jest test file, `process` is a per-file copy whose
 * listeners never fire: 'exit' and 'unhandledRejection' are emitted on the real one only.
 * vm.runInThisContext evaluates in Node's main context, so it returns the real object.
 */
export const realProcess = vm.runInThisContext('process') as NodeJS.Process;

/** Records every unhandled rejection from now until stop(), wherever in the process it happens. */
export function recordUnhandledRejections(): { readonly reasons: unknown[]; stop(): void } {
  const reasons: unknown[] = [];
  const listener = (reason: unknown): void => {
    reasons.push(reason);
  };
  realProcess.on('unhandledRejection', listener);
  return { reasons, stop: () => realProcess.off('unhandledRejection', listener) };
}
