// What a writer's withdrawn intent is announced with on the key's release channel.
/**
 * What a writer's withdrawn intent is announced with on the key's release channel: not the writer's bare
 * token. The same token may already have been announced by a release of the writer's grant (a grant taken
 * back, or released because the caller was cancelled meanwhile) and the hubs count a token once, so the
 * withdrawal, which frees the readers the intent held back, would wake none of them.
 */
export function withdrawalMessage(token: string, occasion?: string): string {
  // `occasion`: a withdrawal the same writer may follow with another (Redlock's withdrawal of an intent an
  // attempt's outcome did not report): counted as a repeat, the later one would wake nobody.
  return occasion === undefined ? `${token}|withdrawn` : `${token}|withdrawn|${occasion}`;
}
