// The one place where the events of OAuth connections happen: `oauth_connection.created` when
// a user approves an app (src/oauth/connections.ts) and `oauth_connection.revoked` whenever
// one stops, whoever stops it (src/admin/connections.ts: the app through POST /oauth/revoke,
// the user in the dashboard, a replayed authorization code, a deleted OAuth client).
//
// It is called inside the transaction that makes the change, so an event can never be
// recorded for a change that rolled back, nor a change be committed without its event. What
// to do with the event (the webhook outbox of the Events section of the design) is not built
// here: webhooks are being built separately and plug in at this function, writing their
// outbox row with `tx`. Until then an event is only this call.
import type { DbPool } from '../db/pool.js';

export interface OAuthConnectionEvent {
  readonly type: 'oauth_connection.created' | 'oauth_connection.revoked';
  /** The paying organization, which owns the connection. */
  readonly orgId: string;
  readonly appConnectionId: string;
  readonly appId: string;
  readonly oauthClientId: string;
  readonly occurredAt: Date;
}

/** Records an OAuth connection's event in the transaction `tx` that changes the connection. */
export async function recordOAuthConnectionEvent(
  tx: Pick<DbPool, 'query'>,
  event: OAuthConnectionEvent,
): Promise<void> {
  // The seam for webhooks (see above): nothing is written yet.
  void tx;
  void event;
}
