import { markSafe, redactedText, safeCause } from './safe-cause';

/**
 * Base class of every error this library throws, so callers can catch the family at once. Its message and
 * cause chain never carry a credential (see safe-cause.ts): they reach logs, events and responses.
 */
export abstract class LockError extends Error {
  protected constructor(message: string, options?: { cause?: unknown }) {
    const cause = options?.cause === undefined ? undefined : safeCause(options.cause);
    super(redactedText(message), cause === undefined ? undefined : { cause });
    this.name = new.target.name;
    markSafe(this);
  }
}
