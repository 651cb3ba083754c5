// What a LockUnavailableError tells its reader to check, chosen from what failed (credentials, ACL, reachability).
import { MADE_UNAVAILABLE, SHUTTING_DOWN, STORE_CLOSED } from './unavailable-details';

/**
 * What a LockUnavailableError tells its reader to check, chosen from what failed: a refused password and an
 * ACL's refusal are not outages, and advice to check that Redis is reachable would send an operator to the
 * network instead of the credentials. Kept out of the errors' index.
 */

/** The module, not Redis, refused the call: no advice about Redis. */
const MODULE_REFUSALS = [SHUTTING_DOWN, STORE_CLOSED, MADE_UNAVAILABLE];

/** Redis' replies to a wrong or missing password (AUTH, HELLO … AUTH, or a command before either). */
const AUTHENTICATION_FAILED = /\b(WRONGPASS|NOAUTH)\b|invalid (username-)?password|AUTH failed/i;

/** Redis' reply to a command or key the connection's ACL user may not use. */
const ACL_REFUSED = /\bNOPERM\b|user executing the script can't run/;

export function unavailableAdvice(detail: string, cause: unknown): string {
  const texts = [detail, ...messagesOf(cause)];
  if (texts.some((text) => MODULE_REFUSALS.some((refusal) => text.includes(refusal)))) return '';
  if (texts.some((text) => AUTHENTICATION_FAILED.test(text))) {
    return (
      ' Redis refused the credentials (authentication failed): check the username and password ' +
      'the connection is given (URL, password/username options, or the borrowed client).'
    );
  }
  if (texts.some((text) => ACL_REFUSED.test(text))) {
    return (
      " Redis' ACL refused the connection's user: allow it the scripting, " +
      'pub/sub and key commands the module uses (README, "Redis ACL").'
    );
  }
  return ' Check that Redis is reachable.';
}

/** The messages of an error's cause chain and of an aggregate's errors, a few levels deep. */
function messagesOf(cause: unknown, depth = 0): string[] {
  if (!(cause instanceof Error) || depth > 4) return [];
  const inner =
    cause instanceof AggregateError ? cause.errors.flatMap((error: unknown) => messagesOf(error, depth + 1)) : [];
  // ioredis' ClusterAllFailedError ("Failed to refresh slots cache") keeps the node's own error here.
  const lastNodeError = messagesOf((cause as { lastNodeError?: unknown }).lastNodeError, depth + 1);
  return [cause.message, ...inner, ...lastNodeError, ...messagesOf(cause.cause, depth + 1)];
}
