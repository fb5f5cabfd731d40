// Provider credentials in Postgres: create (validated with the vendor, sealed), list, disable,
// delete (which also revokes its grants), grant/revoke to app connections, rewrap under a new
// master key. Changes are announced so every gateway instance stops using a credential at once.
import { recordAudit, type Actor } from '../audit/audit.js';
import type { InvalidationPublisher } from '../cache/invalidation.js';
import type { Vendor } from '../catalog/models.js';
import { modelPolicyProblem } from '../catalog/model-policy.js';
import { readPage, type Page, type PageRequest } from '../db/pages.js';
import { withTransaction, type DbPool } from '../db/pool.js';
import type { ErrorCode } from '../errors.js';
import { newId } from '../ids.js';
import {
  toView,
  VIEW_COLUMNS,
  type CredentialView,
  type RoutingMode,
  type ViewRow,
} from './credential-views.js';
import { fingerprint, type SecretBox } from './secret-box.js';
import { validateWithVendor } from './validate.js';

/** Priority 1 is tried first; the schema's integer column takes far more, nobody needs it. */
export const MAX_CREDENTIAL_PRIORITY = 1000;

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

/** What may change on a stored credential (its secret never does: add a new one). */
export interface CredentialChanges {
  readonly name?: string;
  readonly modelPolicy?: readonly string[];
  readonly priority?: number;
  readonly routingMode?: RoutingMode;
}

/**
 * Why a credential change was refused (the message is safe to show: never the secret):
 * `not_found` a credential or connection not in the organization, `rejected` the vendor
 * refused the key, `unreachable` the vendor could not be asked, `not_configured` no master
 * key (BYOK off) or no route to that vendor on this gateway, `invalid` a model policy with a
 * pattern that can never match one of the credential's models.
 */
export type CredentialErrorKind =
  'not_found' | 'rejected' | 'unreachable' | 'not_configured' | 'invalid';

/** Each refusal's code in the error catalogue: the dashboard API's and the CLI's alike. */
export const CREDENTIAL_ERROR_CODES = {
  not_found: 'gw_not_found',
  rejected: 'gw_provider_credential_rejected',
  unreachable: 'gw_provider_credential_unverified',
  not_configured: 'gw_provider_credentials_not_configured',
  invalid: 'gw_invalid_request',
} as const satisfies Readonly<Record<CredentialErrorKind, ErrorCode>>;

export class CredentialError extends Error {
  override readonly name = 'CredentialError';
  constructor(
    message: string,
    readonly kind: CredentialErrorKind = 'not_configured',
  ) {
    super(message);
  }
}

/** A credential serves only its provider's models: a pattern naming another never matches. */
function requireUsablePolicy(policy: readonly string[], provider: Vendor): void {
  const problem = modelPolicyProblem(policy, provider);
  if (problem !== undefined) throw new CredentialError(`model_policy: ${problem}`, 'invalid');
}

/** One page of the organization's credentials (not deleted ones), oldest first. */
export async function listCredentials(
  db: Pick<DbPool, 'query'>,
  orgId: string,
  page: PageRequest,
): Promise<Page<CredentialView>> {
  const paged = await readPage<ViewRow & { cursor_us: string }>(
    db,
    {
      select: `SELECT c.id, c.org_id, c.provider, c.secret_kind, c.name, c.model_policy,
                      c.routing_mode, c.priority, c.status, c.fingerprint, c.created_at,
                      ARRAY(SELECT g.app_connection_id FROM provider_credential_grants g
                             WHERE g.credential_id = c.id ORDER BY g.app_connection_id)
                        AS app_connection_ids,
                      (extract(epoch FROM c.created_at) * 1000000)::bigint::text AS cursor_us
                 FROM provider_credentials c`,
      where: `c.org_id = $1 AND c.status <> 'deleted'`,
      params: [orgId],
      createdAtColumn: 'c.created_at',
      idColumn: 'c.id',
    },
    page,
  );
  return { rows: paged.rows.map(toView), nextCursor: paged.nextCursor };
}

export class CredentialStore {
  constructor(
    private readonly db: DbPool,
    /** Drops this instance's request-path cache at once; the others hear it over pub/sub. */
    private readonly invalidations: InvalidationPublisher,
    private readonly box: SecretBox | undefined,
    private readonly vendorBaseUrl: (provider: Vendor) => string,
  ) {}

  async create(input: NewCredential, actor: Actor): Promise<CredentialView> {
    requireUsablePolicy(input.modelPolicy, input.provider);
    const box = this.requireBox();
    for (const connectionId of input.appConnectionIds)
      await this.requireConnection(input.orgId, connectionId);
    const validation = await validateWithVendor(
      input.provider,
      input.secret,
      this.vendorBaseUrl(input.provider),
    );
    if (validation === 'invalid') {
      throw new CredentialError(
        `${input.provider} refused this key: nothing was stored`,
        'rejected',
      );
    }
    if (validation === 'unreachable') {
      throw new CredentialError(
        `${input.provider} could not be reached to validate the key: nothing was stored`,
        'unreachable',
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
      for (const connectionId of new Set(input.appConnectionIds)) {
        await client.query(
          'INSERT INTO provider_credential_grants (credential_id, app_connection_id) VALUES ($1, $2)',
          [id, connectionId],
        );
      }
      await recordAudit(client, {
        orgId: input.orgId,
        userId: actor.userId,
        action: 'credential.create',
        objectType: 'provider_credential',
        objectId: id,
        // Never the secret: its fingerprint names it.
        details: {
          provider: input.provider,
          name: input.name,
          fingerprint: fingerprint(input.secret),
          model_policy: input.modelPolicy,
          priority: input.priority,
          routing_mode: input.routingMode,
          app_connection_ids: [...new Set(input.appConnectionIds)],
        },
      });
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

  /**
   * Disables, re-enables or deletes a credential (deleting also revokes its connection
   * grants; a deleted one is gone for good). Undefined when there is no such credential.
   */
  async setStatus(
    id: string,
    status: 'active' | 'disabled' | 'deleted',
    actor: Actor,
  ): Promise<CredentialView | undefined> {
    const before = await this.get(id);
    if (!before) return undefined;
    await withTransaction(this.db, async (client) => {
      const { rowCount } = await client.query(
        `UPDATE provider_credentials SET status = $2, updated_at = now()
          WHERE id = $1 AND status <> 'deleted' AND status <> $2`,
        [id, status],
      );
      // Deleting a credential also revokes its connection grants.
      if (status === 'deleted')
        await client.query('DELETE FROM provider_credential_grants WHERE credential_id = $1', [id]);
      if (rowCount) {
        await recordAudit(client, {
          orgId: before.org_id,
          userId: actor.userId,
          action: `credential.${status === 'active' ? 'enable' : status === 'disabled' ? 'disable' : 'delete'}`,
          objectType: 'provider_credential',
          objectId: id,
        });
      }
    });
    await this.announce();
    return { ...before, status, ...(status === 'deleted' && { app_connection_ids: [] }) };
  }

  /** Renames a credential or changes its model policy, priority or routing mode. */
  async update(
    id: string,
    changes: CredentialChanges,
    actor: Actor,
  ): Promise<CredentialView | undefined> {
    const before = await this.get(id);
    if (!before) return undefined;
    if (changes.modelPolicy !== undefined)
      requireUsablePolicy(changes.modelPolicy, before.provider);
    await withTransaction(this.db, async (client) => {
      await client.query(
        `UPDATE provider_credentials
            SET name = COALESCE($2, name),
                model_policy = COALESCE($3, model_policy),
                priority = COALESCE($4, priority),
                routing_mode = COALESCE($5, routing_mode),
                updated_at = now()
          WHERE id = $1`,
        [
          id,
          changes.name ?? null,
          changes.modelPolicy ?? null,
          changes.priority ?? null,
          changes.routingMode ?? null,
        ],
      );
      await recordAudit(client, {
        orgId: before.org_id,
        userId: actor.userId,
        action: 'credential.update',
        objectType: 'provider_credential',
        objectId: id,
        details: {
          ...(changes.name !== undefined && { name: changes.name }),
          ...(changes.modelPolicy !== undefined && { model_policy: changes.modelPolicy }),
          ...(changes.priority !== undefined && { priority: changes.priority }),
          ...(changes.routingMode !== undefined && { routing_mode: changes.routingMode }),
        },
      });
    });
    await this.announce();
    return this.get(id);
  }

  /** Grants the credential to a connection of its organization, or takes the grant back. */
  async grant(
    id: string,
    appConnectionId: string,
    granted: boolean,
    actor: Actor,
  ): Promise<CredentialView | undefined> {
    const credential = await this.get(id);
    if (!credential) return undefined;
    // A connection of another organization (or none) is not found, for a grant and its removal alike.
    await this.requireConnection(credential.org_id, appConnectionId);
    await withTransaction(this.db, async (client) => {
      const { rowCount } = granted
        ? await client.query(
            'INSERT INTO provider_credential_grants (credential_id, app_connection_id) VALUES ($1, $2) ON CONFLICT DO NOTHING',
            [id, appConnectionId],
          )
        : await client.query(
            'DELETE FROM provider_credential_grants WHERE credential_id = $1 AND app_connection_id = $2',
            [id, appConnectionId],
          );
      if (rowCount) {
        await recordAudit(client, {
          orgId: credential.org_id,
          userId: actor.userId,
          action: granted ? 'credential.grant' : 'credential.revoke_grant',
          objectType: 'provider_credential',
          objectId: id,
          details: { app_connection_id: appConnectionId },
        });
      }
    });
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
    if (rowCount === 0) {
      throw new CredentialError(
        `no app connection ${appConnectionId} in this organization`,
        'not_found',
      );
    }
  }

  private async announce(): Promise<void> {
    await this.invalidations.publish({ kind: 'credentials' });
  }
}
