// Describes the store a module's options configure, for a log line, never with a password.
import { redactedUrl } from '../errors/redacted-url';
import type { ResolvedLockOptions } from './lock-options.interface';

/** The store a module's options configure, for a log line: its kind, address (never a password) and prefix. */
export function describeStore(options: ResolvedLockOptions): string {
  let store: string;
  if (options.nodes !== undefined) store = `Redlock over ${options.nodes.length} nodes`;
  else if (typeof options.redis === 'string') store = `Redis at ${redactedUrl(options.redis)}`;
  else if (options.redis !== undefined) store = 'Redis (a client or options object)';
  else store = 'the in-process store';
  return `${store}, keyPrefix '${options.keyPrefix}'`;
}
