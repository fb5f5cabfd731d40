// DELETE /dashboard/api/apps/{app_id} (admin or owner): deletes an app softly. Its OAuth
// clients are deleted, its connections (also those other organizations made by OAuth consent)
// revoked, and their API keys and tokens stop working on every instance at once; its
// usage, product users and audit entries keep naming it (the ledger is never rewritten). It
// leaves the app list and takes no new connections. Deleting it again answers it unchanged.
import { appDetailView, deleteAppAs } from '../../../admin/apps.js';
import { gwError } from '../../../errors.js';
import { deleteOAuthClientsOfAppAs } from '../../../oauth/clients.js';
import { declareRoute } from '../../framework/declaration.js';
import type { KeyRevokingDeps } from '../schemas.js';
import { ofApp } from './schema.js';
import { appDetailSchema } from './answers.js';

export const deleteAppRoute = declareRoute({
  method: 'DELETE',
  path: '/dashboard/api/apps/{app_id}',
  summary: 'Deletes an app: its connections are revoked and its API keys stop at once',
  caller: { kind: 'org_member', role: 'admin', org: ofApp },
  responses: { 200: { description: 'the deleted app', schema: appDetailSchema } },
  async handler({ params, caller }, deps: KeyRevokingDeps) {
    // Its OAuth clients first, so no one can connect the app while it is being deleted.
    await deleteOAuthClientsOfAppAs(deps.db, deps.apiKeys, caller.actor, params.app_id);
    const app = await deleteAppAs(deps.db, deps.apiKeys, caller.actor, params.app_id);
    if (!app) return gwError('gw_not_found', 'no app with this id');
    return appDetailView(app.row, app.counts);
  },
});
