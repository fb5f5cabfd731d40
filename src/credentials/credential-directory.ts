// The request path's view of BYOK credentials: per organization, the active credentials with
// their connection grants and decrypted secrets, cached in process and dropped on every
// instance when an admin changes one (pub/sub 'credentials').
import type { CredentialChoice } from '../billing/budget-store.js';
import type { CacheInvalidation, InvalidatedCache } from '../cache/invalidation.js';
import { LocalCache } from '../cache/local-cache.js';
import { modelPolicyAllows, type CatalogModel, type Vendor } from '../catalog/models.js';
import type { DbPool } from '../db/pool.js';
import type { RoutingMode } from './credential-views.js';
import type { SecretBox } from './secret-box.js';

interface UsableCredential {
  readonly id: string;
  readonly provider: Vendor;
  readonly modelPolicy: readonly string[];
  readonly routingMode: RoutingMode;
  readonly priority: number;
  readonly appConnectionIds: ReadonlySet<string>;
  readonly secret: string;
}

interface Row {
  id: string;
  provider: Vendor;
  model_policy: string[];
  routing_mode: RoutingMode;
  priority: number;
  key_id: string;
  iv: Buffer;
  ciphertext: Buffer;
  auth_tag: Buffer;
  app_connection_ids: string[];
}

export class CredentialDirectory implements InvalidatedCache {
  private readonly cache: LocalCache<UsableCredential[]>;

  constructor(
    private readonly db: DbPool,
    private readonly box: SecretBox | undefined,
    ttlMs = 30_000,
    maxOrgs = 50_000,
    maxBytes = 64 * 1024 * 1024,
  ) {
    // An org without credentials is an empty list, cached like any other.
    this.cache = new LocalCache({ ttlMs, negativeTtlMs: 0, maxEntries: maxOrgs, maxBytes });
  }

  /** Eligible credentials for one request (status, provider, model policy, connection grant). */
  async choiceFor(
    orgId: string,
    appConnectionId: string,
    model: CatalogModel,
  ): Promise<CredentialChoice | null> {
    const eligible = (await this.forOrg(orgId)).filter(
      (credential) =>
        credential.provider === model.vendor &&
        credential.appConnectionIds.has(appConnectionId) &&
        modelPolicyAllows(credential.modelPolicy, model.id),
    );
    if (eligible.length === 0) return null;
    const tiers = new Map<number, string[]>();
    for (const credential of eligible) {
      const tier = tiers.get(credential.priority) ?? [];
      tier.push(credential.id);
      tiers.set(credential.priority, tier);
    }
    return {
      tiers: [...tiers.entries()].sort(([a], [b]) => a - b).map(([, ids]) => ids),
      // The system route may serve only if every eligible credential allows it.
      byokOnly: eligible.some((credential) => credential.routingMode === 'byok_only'),
    };
  }

  /** The secret to send to the vendor (the only place it leaves this process). */
  async secretOf(orgId: string, credentialId: string): Promise<string | undefined> {
    return (await this.forOrg(orgId)).find((credential) => credential.id === credentialId)?.secret;
  }

  handleInvalidation(invalidation: CacheInvalidation): void {
    if (invalidation.kind === 'credentials') this.cache.invalidateAll();
  }

  /** Forgets everything cached (invalidations may have been missed). */
  clearLocalCache(): void {
    this.cache.invalidateAll();
  }

  private async forOrg(orgId: string): Promise<UsableCredential[]> {
    return (await this.cache.get(orgId, () => this.load(orgId))) ?? [];
  }

  private async load(orgId: string): Promise<UsableCredential[]> {
    const { rows } = await this.db.query<Row>(
      `SELECT c.id, c.provider, c.model_policy, c.routing_mode, c.priority, c.key_id, c.iv,
              c.ciphertext, c.auth_tag,
              COALESCE(array_agg(g.app_connection_id) FILTER (WHERE g.app_connection_id IS NOT NULL), '{}') AS app_connection_ids
         FROM provider_credentials c
         LEFT JOIN provider_credential_grants g ON g.credential_id = c.id
        WHERE c.org_id = $1 AND c.status = 'active'
        GROUP BY c.id`,
      [orgId],
    );
    // Without a master key, stored credentials cannot be opened: the system route serves.
    const credentials = this.box
      ? rows.map((row) => ({
          id: row.id,
          provider: row.provider,
          modelPolicy: row.model_policy,
          routingMode: row.routing_mode,
          priority: row.priority,
          appConnectionIds: new Set(row.app_connection_ids),
          secret: this.box!.open({
            keyId: row.key_id,
            iv: row.iv,
            ciphertext: row.ciphertext,
            authTag: row.auth_tag,
          }),
        }))
      : [];
    return credentials;
  }
}
