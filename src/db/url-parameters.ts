// The connection settings gw gives every Postgres session itself (src/db/pool.ts). pg lets a
// parameter in the connection URL override the pool's own, so `?statement_timeout=0` in
// DATABASE_URL would lift every bound on a statement and `?application_name=x` would hide
// which pool holds a connection. The configuration refuses such a URL instead.

/** URL parameters pg reads into a session's settings where the pool sets its own. */
const POOL_SETTINGS = [
  'application_name',
  'statement_timeout',
  'query_timeout',
  'idle_in_transaction_session_timeout',
] as const;

/**
 * The settings `databaseUrl` names that the pools set themselves: as query parameters, or
 * as `-c name=value` in its `options` parameter (what libpq and pg pass to the server).
 * Empty: the URL leaves them to gw.
 */
export function poolSettingsInUrl(databaseUrl: string): string[] {
  let parameters: URLSearchParams;
  try {
    parameters = new URL(databaseUrl).searchParams;
  } catch {
    return []; // not a URL: the schema says so
  }
  const named = new Set<string>();
  for (const setting of POOL_SETTINGS) if (parameters.has(setting)) named.add(setting);
  for (const options of parameters.getAll('options')) {
    for (const setting of POOL_SETTINGS) {
      if (new RegExp(`(^|\\s)(-c\\s*|--)${setting}\\s*=`).test(options)) named.add(setting);
    }
  }
  return [...named];
}
