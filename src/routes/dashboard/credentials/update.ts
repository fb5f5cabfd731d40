// PATCH /dashboard/api/credentials/{credential_id} (admin or owner): renames a credential or
// changes its model policy, priority or routing mode, and disables or re-enables it
// (`status`). Its secret never changes: add a new credential instead. Every instance uses the
// change for its next request. Answered with `warnings` as the create is: no connection granted
// (whatever changed), the models the catalogue lacks (only when a model policy was written).
import { z } from 'zod';
import { ROUTING_MODES } from '../../../credentials/credential-views.js';
import { writtenCredential } from '../../../credentials/written-credential.js';
import { declareRoute } from '../../framework/declaration.js';
import { displayName, modelPolicySchema } from '../schemas.js';
import {
  credentialNotFound,
  credentialRefusal,
  ofCredential,
  prioritySchema,
  type CredentialWriteDeps,
} from './schema.js';
import { writtenCredentialSchema } from './answers.js';

const updateCredentialBody = z
  .strictObject({
    name: displayName.optional(),
    model_policy: modelPolicySchema.optional(),
    priority: prioritySchema.optional(),
    routing_mode: z.enum(ROUTING_MODES).optional(),
    /** `disabled`: kept, never used; `active`: used again. */
    status: z.enum(['active', 'disabled']).optional(),
  })
  .refine((body) => Object.keys(body).length > 0, 'name at least one field to change');

export const updateCredentialRoute = declareRoute({
  method: 'PATCH',
  path: '/dashboard/api/credentials/{credential_id}',
  summary: 'Changes a provider credential: name, model policy, priority, routing mode, status',
  caller: { kind: 'org_member', role: 'admin', org: ofCredential },
  body: updateCredentialBody,
  responses: {
    200: {
      description:
        'the credential, and its warnings (no connection granted, models the catalogue lacks)',
      schema: writtenCredentialSchema,
    },
  },
  async handler({ params, caller, body }, deps: CredentialWriteDeps) {
    const id = params.credential_id;
    const { status, ...settings } = body;
    let credential = await deps.credentialStore.get(id);
    if (credential && Object.keys(settings).length > 0) {
      try {
        credential = await deps.credentialStore.update(
          id,
          {
            ...(settings.name !== undefined && { name: settings.name }),
            ...(settings.model_policy !== undefined && { modelPolicy: settings.model_policy }),
            ...(settings.priority !== undefined && { priority: settings.priority }),
            ...(settings.routing_mode !== undefined && { routingMode: settings.routing_mode }),
          },
          caller.actor,
        );
      } catch (error) {
        // A model policy naming another provider than the credential's (400).
        return credentialRefusal(error);
      }
    }
    if (credential && status !== undefined) {
      credential = await deps.credentialStore.setStatus(id, status, caller.actor);
    }
    // A deleted credential is gone, as one that never existed.
    if (!credential) return credentialNotFound();
    return writtenCredential(deps.db, credential, settings.model_policy !== undefined);
  },
});
