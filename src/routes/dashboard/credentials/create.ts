// POST /dashboard/api/orgs/{org_id}/credentials (admin or owner): adds a provider credential
// (bring your own key). The secret is checked with the vendor first (nothing is stored if it
// refuses), sealed with the master key, and never answered, logged or audited: the answer has
// its fingerprint, and `warnings`: that it is granted to no connection, so serves nothing
// (decision 456), and the exact model ids of its policy the catalogue does not list yet (stored
// all the same: decisions 338, 350). The same service as `gw credentials add`; every instance
// sees it at once.
import { z } from 'zod';
import { findProvider, PROVIDER_IDS } from '../../../providers/registry.js';
import { ROUTING_MODES } from '../../../credentials/credential-views.js';
import { writtenCredential } from '../../../credentials/written-credential.js';
import { declareRoute } from '../../framework/declaration.js';
import { displayName, inOrg, modelPolicySchema } from '../schemas.js';
import { credentialRefusal, prioritySchema, type CredentialWriteDeps } from './schema.js';
import { writtenCredentialSchema } from './answers.js';

const createCredentialBody = z.strictObject({
  provider: z.enum(PROVIDER_IDS as [string, ...string[]]),
  name: displayName,
  /** Printable ASCII without spaces, as vendors' keys are (it travels in a header). */
  secret: z
    .string()
    .min(1, 'must not be empty')
    .max(1024, 'must be at most 1024 characters')
    .regex(/^[\x21-\x7e]+$/, 'must be printable ASCII without spaces'),
  /** Default: the provider's own models (`vendor_a/*`). */
  model_policy: modelPolicySchema.optional(),
  /** Default 1 (tried first); credentials of one priority take turns. */
  priority: prioritySchema.optional(),
  /** Default `byok_first` (the system route serves when no credential can). */
  routing_mode: z.enum(ROUTING_MODES).optional(),
  /** Connections of this organization the credential may serve (granted now). */
  app_connection_ids: z.array(z.string().max(64)).max(100).optional(),
});

export const createCredentialRoute = declareRoute({
  method: 'POST',
  path: '/dashboard/api/orgs/{org_id}/credentials',
  summary: 'Adds a provider credential, checked with the vendor first (fingerprint back)',
  caller: { kind: 'org_member', role: 'admin', org: inOrg },
  idempotent: true,
  body: createCredentialBody,
  responses: {
    201: {
      description:
        'the credential, and its warnings (no connection granted, models the catalogue lacks)',
      schema: writtenCredentialSchema,
    },
  },
  errors: [
    'gw_not_found',
    'gw_provider_credential_rejected',
    'gw_provider_credential_unverified',
    'gw_provider_credentials_not_configured',
  ],
  async handler({ caller, body }, deps: CredentialWriteDeps) {
    const provider = findProvider(body.provider)!;
    let created;
    try {
      created = await deps.credentialStore.create(
        {
          orgId: caller.org.id,
          provider: provider.id,
          name: body.name,
          secret: body.secret,
          modelPolicy: body.model_policy ?? provider.defaultModelPolicy,
          priority: body.priority ?? 1,
          routingMode: body.routing_mode ?? 'byok_first',
          appConnectionIds: body.app_connection_ids ?? [],
        },
        caller.actor,
      );
    } catch (error) {
      return credentialRefusal(error);
    }
    return writtenCredential(deps.db, created, true);
  },
});
