/**
 * Who holds a lease is written into the lease itself: its value in the store is `<token>|<instance>`.
 * The compare scripts (extend, release) compare that whole value, so the owner costs no extra round trip
 * and the token keeps its 128 random bits; `Lock.token` is the random part. The token is hex, so the first
 * `|` ends it, whatever the instance name contains.
 */
const SEPARATOR = '|';

/** The value a grant stores: what the store's compare-and-set scripts check. */
export function leaseValue(token: string, instance: string): string {
  return `${token}${SEPARATOR}${instance}`;
}

/** Splits a stored value; a value without an owner (written by an older version) has instance 'unknown'. */
export function parseLeaseValue(value: string): { readonly token: string; readonly instance: string } {
  const at = value.indexOf(SEPARATOR);
  return at < 0 ? { token: value, instance: 'unknown' } : { token: value.slice(0, at), instance: value.slice(at + 1) };
}
