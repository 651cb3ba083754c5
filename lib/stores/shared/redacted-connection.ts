/** A connection as an error message may show it: a URL without its password (other values as they are). */
export function redactedConnection(connection: unknown): unknown {
  if (typeof connection !== 'string' || !URL.canParse(connection)) return connection;
  const url = new URL(connection);
  if (url.password === '') return connection;
  url.password = '***';
  return url.toString();
}
