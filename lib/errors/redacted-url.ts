/**
 * A string as an error message may show it: a URL without its password. Kept out of the errors' index: the
 * option errors' own printing (lock-options.error.ts), so no caller has to remember it.
 */
export function redactedUrl(text: string): string {
  if (!URL.canParse(text)) return redactedUnparsed(text);
  const url = new URL(text);
  if (url.password === '') return text;
  url.password = '***';
  return url.toString();
}

/**
 * A URL that does not parse (a password with an unencoded `#` or `@`, a port above 65535): its credentials, up to
 * the last `@` after the scheme, are cut by hand. `user:password@` keeps the user; a lone `secret@` is cut whole.
 */
function redactedUnparsed(text: string): string {
  const credentials = /^([a-z][a-z0-9+.-]*:\/\/)(.*)@/i.exec(text);
  if (!credentials) return text;
  const [whole, scheme, userinfo] = credentials;
  const colon = userinfo.indexOf(':');
  const shown = colon >= 0 ? `${userinfo.slice(0, colon)}:***` : '***';
  return `${scheme}${shown}@${text.slice(whole.length)}`;
}
