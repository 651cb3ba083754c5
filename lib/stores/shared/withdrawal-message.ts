/**
 * What a writer's withdrawn intent is announced with on the key's release channel: not the writer's bare
 * token. The same token may already have been announced by a release of the writer's grant (a grant taken
 * back, or released because the caller was cancelled meanwhile) and the hubs count a token once, so the
 * withdrawal, which frees the readers the intent held back, would wake none of them.
 */
export function withdrawalMessage(token: string): string {
  return `${token}|withdrawn`;
}
