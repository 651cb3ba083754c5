/** How every error message names its keys: quoted, so an empty or odd key is visible. */
export function formatKeys(keys: readonly string[]): string {
  return keys.length ? keys.map((key) => JSON.stringify(key)).join(', ') : 'no keys';
}
