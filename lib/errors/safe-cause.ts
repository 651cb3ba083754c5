// What a lock error may carry of a client's error and message: copies and redacted text, never a credential.
import { redactedUrl } from './redacted-url';

/**
 * What a lock error may carry of a client's error. Clients attach what they sent to their errors (ioredis
 * puts `command: { name: 'hello', args: ['3', 'AUTH', user, password] }` on a refused HELLO, node-redis its
 * options on others), and a logger or `util.inspect` prints a cause chain whole, at any depth. So a lock
 * error never keeps a foreign error: it keeps a copy with the name, a redacted message, the stack frames and
 * the few fields that say what failed without naming a secret. Kept out of the errors' index.
 */

/** Fields of Node's and the clients' errors that name what failed, never what was sent. */
const KEPT_FIELDS = ['code', 'errno', 'syscall', 'address', 'port'] as const;

/** How deep a cause chain is copied; deeper links are dropped (a chain that long says nothing more). */
const MAX_DEPTH = 8;

/** Errors known to carry no secret: this library's own (LockError marks itself) and the copies made here. */
const safeErrors = new WeakSet<Error>();

/** Marks an error whose message and fields this library composed, so a chain keeps it as it is. */
export function markSafe(error: Error): void {
  safeErrors.add(error);
}

/**
 * A client's error as a lock error keeps it (see the file's comment): a plain Error, so that it prints as the
 * original did (`Error [ReplyError]: WRONGPASS …`).
 */
function copyOf(original: Error, depth: number): Error {
  const message = plainText(original.message);
  const cause = depth < MAX_DEPTH ? safeCopy(original.cause, depth + 1) : undefined;
  const copy = new Error(message, cause === undefined ? undefined : { cause });
  if (original.name !== 'Error')
    Object.defineProperty(copy, 'name', {
      value: original.name,
      enumerable: false,
      configurable: true,
      writable: true,
    });
  for (const field of KEPT_FIELDS) {
    const value = (original as unknown as Record<string, unknown>)[field];
    if (typeof value === 'string' || typeof value === 'number')
      Object.defineProperty(copy, field, { value, enumerable: true });
  }
  if (original instanceof AggregateError) {
    const errors = original.errors.slice(0, MAX_DEPTH).map((error: unknown) => safeCopy(error, depth + 1));
    Object.defineProperty(copy, 'errors', { value: errors, enumerable: true });
  }
  copy.stack = `${original.name}: ${message}${framesOf(original.stack)}`;
  markSafe(copy);
  return copy;
}

/** A cause as a lock error keeps it: this library's own errors as they are, any other error copied. */
export function safeCause(cause: unknown): unknown {
  return safeCopy(cause, 0);
}

function safeCopy(cause: unknown, depth: number): unknown {
  if (cause === undefined || cause === null) return undefined;
  if (cause instanceof Error && safeErrors.has(cause)) return cause;
  if (cause instanceof Error) return copyOf(cause, depth);
  if (typeof cause === 'string') return plainText(cause);
  // A rejection with a plain object or another value: its fields may be anything the client was given.
  return `a non-error value (${typeof cause})`;
}

/** The stack's frames, without its first line (the original message, which may name a secret). */
function framesOf(stack: string | undefined): string {
  if (stack === undefined) return '';
  const firstFrame = stack.search(/\n\s+at /);
  return firstFrame < 0 ? '' : stack.slice(firstFrame);
}

/**
 * AUTH (alone, or in HELLO's arguments) written out in a message, with up to two arguments: user, password.
 * Upper case only, as commands are written: a lock key "auth" in a message is left alone.
 */
const AUTH_ARGUMENTS = /\b(AUTH)\b['"`]?(?:\s+['"`]?[^\s'"`]+['"`]?){1,2}/g;

/** Redis' "unknown command" error quotes the command's first arguments (HELLO 3 AUTH user password). */
const QUOTED_ARGUMENTS = /(with args beginning with:).*$/gim;

/** Any URL with a scheme and `//` in free text: its password is cut (redactedUrl). */
const URL_IN_TEXT = /\b[a-z][a-z0-9+.-]*:\/\/[^\s"'<>]+/gi;

/**
 * ioredis' rejection of a command queued while the connection is down advises a setting
 * (`maxRetriesPerRequest`) that this module set, not the user: said plainly instead.
 */
const IOREDIS_RETRIES_EXHAUSTED =
  /Reached the max retries per request limit \(which is \d+\)\. Refer to "maxRetriesPerRequest" option for details\./;

/** An error's message as this library logs or embeds it: see redactedText, and without client advice. */
export function safeMessage(error: unknown): string {
  const message =
    error instanceof Error ? error.message : typeof error === 'string' ? error : String(safeCopy(error, 0));
  return plainText(message);
}

function plainText(message: string): string {
  return redactedText(message.replace(IOREDIS_RETRIES_EXHAUSTED, 'not sent: the connection is down'));
}

/** A message as a lock error may show it: URLs without passwords, no AUTH arguments, no quoted arguments. */
export function redactedText(text: string): string {
  return text
    .replace(QUOTED_ARGUMENTS, '$1 …')
    .replace(URL_IN_TEXT, (url) => redactedUrl(url))
    .replace(AUTH_ARGUMENTS, '$1 ***');
}
