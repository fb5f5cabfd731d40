// Provider credentials in Postgres: create (validated with the vendor, sealed), list, disable,
// delete (which also revokes its grants), grant/revoke to app connections, rewrap under a new
// master key. Changes are announced so every gateway instance stops using a credential at once.
import type { RedisClient } from '../redis/connect.js';
import type { Vendor } from '../catalog/models.js';
import { withTransaction, type DbPool } from '../db/pool.js';
import { newId } from '../ids.js';
import type { RedisKeys } from '../redis/keys.js';
import { fingerprint, type SecretBox } from './secret-box.js';
import { validateWithVendor } from './validate.js';

export type RoutingMode = 'byok_first' | 'byok_only';

export interface NewCredential {
  readonly orgId: string;
  readonly provider: Vendor;
  readonly name: string;
  readonly secret: string;
  readonly modelPolicy: readonly string[];
  readonly priority: number;
  readonly routingMode: RoutingMode;
  readonly appConnectionIds: readonly string[];
}

export interface CredentialView {
  id: string;
  org_id: string;
  provider: Vendor;
  secret_kind: 'api_key';
  name: string;
  model_policy: string[];
  routing_mode: RoutingMode;
  priority: number;
  status: string;
  fingerprint: string;
  app_connection_ids: string[];
  created_at: string;
}

export class CredentialError extends Error {
  override readonly name = 'CredentialError';
}

export const CREDENTIALS_INVALIDATION_MESSAGE = 'credentials';
const VIEW_COLUMNS = `c.id, c.org_id, c.provider, c.secret_kind, c.name, c.model_policy, c.routing_mode,
  c.priority, c.status, c.fingerprint, c.created_at,
  COALESCE(array_agg(g.app_connection_id ORDER BY g.app_connection_id)
           FILTER (WHERE g.app_connection_id IS NOT NULL), '{}') AS app_connection_ids`;

interface ViewRow extends Omit<CredentialView, 'created_at'> {
  created_at: Date;
}

const toView = (row: ViewRow): CredentialView => ({
  ...row,
  created_at: row.created_at.toISOString(),
});

/** The views of these credentials (any status), by id: what webhook events about them carry. */
export async function credentialViews(
  db: Pick<DbPool, 'query'>,
  ids: readonly string[],
): Promise<Map<string, CredentialView>> {
  const { rows } = await db.query<ViewRow>(
    `SELECT ${VIEW_COLUMNS} FROM provider_credentials c
       LEFT JOIN provider_credential_grants g ON g.credential_id = c.id
      WHERE c.id = ANY($1::text[]) GROUP BY c.id`,
    [ids],
  );
  return new Map(rows.map((row) => [row.id, toView(row)]));
}

export class CredentialStore {
  constructor(
    private readonly db: DbPool,
    private readonly redis: RedisClient,
    private readonly keys: RedisKeys,
    private readonly box: SecretBox | undefined,
    private readonly vendorBaseUrl: (provider: Vendor) => string,
  ) {}

  async create(input: NewCredential): Promise<CredentialView> {
    const box = this.requireBox();
    for (const connectionId of input.appConnectionIds)
      await this.requireConnection(input.orgId, connectionId);
    const validation = await validateWithVendor(
      input.provider,
      input.secret,
      this.vendorBaseUrl(input.provider),
    );
    if (validation === 'invalid')
      throw new CredentialError(`${input.provider} refused this key: nothing was stored`);
    if (validation === 'unreachable') {
      throw new CredentialError(
        `${input.provider} could not be reached to validate the key: nothing was stored`,
      );
    }
    const sealed = box.seal(input.secret);
    const id = newId('cred');
    await withTransaction(this.db, async (client) => {
      await client.query(
        `INSERT INTO provider_credentials (id, org_id, provider, name, model_policy, routing_mode,
           priority, key_id, iv, ciphertext, auth_tag, fingerprint)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)`,
        [
          id,
          input.orgId,
          input.provider,
          input.name,
          input.modelPolicy,
          input.routingMode,
          input.priority,
          sealed.keyId,
          sealed.iv,
          sealed.ciphertext,
          sealed.authTag,
          fingerprint(input.secret),
        ],
      );
      for (const connectionId of input.appConnectionIds) {
        await client.query(
          'INSERT INTO provider_credential_grants (credential_id, app_connection_id) VALUES ($1, $2)',
          [id, connectionId],
        );
      }
    });
    await this.announce();
    return (await this.get(id))!;
  }

  async list(orgId: string): Promise<CredentialView[]> {
    const { rows } = await this.db.query<ViewRow>(
      `SELECT ${VIEW_COLUMNS} FROM provider_credentials c
         LEFT JOIN provider_credential_grants g ON g.credential_id = c.id
        WHERE c.org_id = $1 AND c.status <> 'deleted' GROUP BY c.id ORDER BY c.provider, c.priority, c.created_at`,
      [orgId],
    );
    return rows.map(toView);
  }

  async get(id: string): Promise<CredentialView | undefined> {
    const { rows } = await this.db.query<ViewRow>(
      `SELECT ${VIEW_COLUMNS} FROM provider_credentials c
         LEFT JOIN provider_credential_grants g ON g.credential_id = c.id
        WHERE c.id = $1 AND c.status <> 'deleted' GROUP BY c.id`,
      [id],
    );
    return rows[0] ? toView(rows[0]) : undefined;
  }

  async setStatus(
    id: string,
    status: 'active' | 'disabled' | 'deleted',
  ): Promise<CredentialView | undefined> {
    const before = await this.get(id);
    if (!before) return undefined;
    await this.db.query(
      `UPDATE provider_credentials SET status = $2, updated_at = now() WHERE id = $1`,
      [id, status],
    );
    // Deleting a credential also revokes its connection grants.
    if (status === 'deleted')
      await this.db.query('DELETE FROM provider_credential_grants WHERE credential_id = $1', [id]);
    await this.announce();
    return { ...before, status, ...(status === 'deleted' && { app_connection_ids: [] }) };
  }

  async grant(
    id: string,
    appConnectionId: string,
    granted: boolean,
  ): Promise<CredentialView | undefined> {
    const credential = await this.get(id);
    if (!credential) return undefined;
    if (granted) {
      await this.requireConnection(credential.org_id, appConnectionId);
      await this.db.query(
        'INSERT INTO provider_credential_grants (credential_id, app_connection_id) VALUES ($1, $2) ON CONFLICT DO NOTHING',
        [id, appConnectionId],
      );
    } else {
      await this.db.query(
        'DELETE FROM provider_credential_grants WHERE credential_id = $1 AND app_connection_id = $2',
        [id, appConnectionId],
      );
    }
    await this.announce();
    return this.get(id);
  }

  /** Re-encrypts every credential (of one org, if given) not sealed under the current master key. */
  async rewrap(orgId?: string): Promise<{ rewrapped: number; current_key_id: string }> {
    const box = this.requireBox();
    const { rows } = await this.db.query<{
      id: string;
      key_id: string;
      iv: Buffer;
      ciphertext: Buffer;
      auth_tag: Buffer;
    }>(
      `SELECT id, key_id, iv, ciphertext, auth_tag FROM provider_credentials
        WHERE key_id <> $1 AND ($2::text IS NULL OR org_id = $2)`,
      [box.currentKeyId, orgId ?? null],
    );
    for (const row of rows) {
      const secret = box.open({
        keyId: row.key_id,
        iv: row.iv,
        ciphertext: row.ciphertext,
        authTag: row.auth_tag,
      });
      const sealed = box.seal(secret);
      await this.db.query(
        'UPDATE provider_credentials SET key_id = $2, iv = $3, ciphertext = $4, auth_tag = $5, updated_at = now() WHERE id = $1 AND key_id = $6',
        [row.id, sealed.keyId, sealed.iv, sealed.ciphertext, sealed.authTag, row.key_id],
      );
    }
    if (rows.length > 0) await this.announce();
    return { rewrapped: rows.length, current_key_id: box.currentKeyId };
  }

  private requireBox(): SecretBox {
    if (!this.box) {
      throw new CredentialError(
        'CREDENTIALS_MASTER_KEY is not set: provider credentials cannot be stored or used',
      );
    }
    return this.box;
  }

  private async requireConnection(orgId: string, appConnectionId: string): Promise<void> {
    const { rowCount } = await this.db.query(
      'SELECT 1 FROM app_connections WHERE id = $1 AND org_id = $2',
      [appConnectionId, orgId],
    );
    if (rowCount === 0)
      throw new CredentialError(`no app connection ${appConnectionId} in this organization`);
  }

  private async announce(): Promise<void> {
    await this.redis.publish(this.keys.invalidationChannel(), CREDENTIALS_INVALIDATION_MESSAGE);
  }
}
