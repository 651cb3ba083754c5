/**
 * A string as an error message may show it: a URL without its password. Kept out of the errors' index: the
 * option errors' own printing (lock-options.error.ts), so no caller has to remember it.
 */
export function redactedUrl(text: string): string {
  if (!URL.canParse(text)) return text;
  const url = new URL(text);
  if (url.password === '') return text;
  url.password = '***';
  return url.toString();
}
