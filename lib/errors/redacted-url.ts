/**
 * A string as an error message may show it: a URL without its password. Kept out of the errors' index: the
 * option errors' own printing (lock-options.error.ts), so no caller has to remember it.
 */
export function redactedUrl(text: string): string {
  if (!URL.canParse(text)) return redactedUnparsed(text);
  const url = new URL(text);
  // `redis:/:secret@host` (one slash) parses, as a path without a host: cut by hand too.
  if (url.host === '') return redactedUnparsed(text);
  // ioredis also reads a password from the query (?password=…).
  const inQuery = url.searchParams.has('password');
  if (url.password === '' && !inQuery) return text;
  if (url.password !== '') url.password = '***';
  if (inQuery) url.searchParams.set('password', '***');
  return url.toString();
}

/**
 * A URL that does not parse (a password with an unencoded `#`, a port above 65535, a leading space from an env
 * file, `redis:/` with one slash): its credentials, up to the last `@` after the scheme, are cut by hand, and a
 * `password=` in its query. `user:password@` keeps the user; a lone `secret@` is cut whole.
 */
function redactedUnparsed(text: string): string {
  const withoutQueryPassword = text.replace(/([?&]password=)[^&#]*/gi, '$1***');
  const at = withoutQueryPassword.lastIndexOf('@');
  if (at < 0) return withoutQueryPassword;
  // Up to the last `@`, after any scheme (or none: `user:pw@host`, `redis//:pw@host`, a scheme mistyped).
  const scheme = /^\s*[a-z][a-z0-9+.-]*:\/+/i.exec(withoutQueryPassword)?.[0] ?? '';
  const userinfo = withoutQueryPassword.slice(scheme.length, at);
  const colon = userinfo.indexOf(':');
  const shown = colon >= 0 ? `${userinfo.slice(0, colon)}:***` : '***';
  return `${scheme}${shown}${withoutQueryPassword.slice(at)}`;
}
