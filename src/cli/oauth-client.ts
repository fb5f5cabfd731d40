// gw oauth-client create|list|delete: OAuth clients of an app, through the same service as the
// dashboard API (src/oauth/clients.ts), audited as done from the command line.
import { pageRequest } from '../db/pages.js';
import {
  createOAuthClientAs,
  deleteOAuthClientAs,
  listOAuthClients,
  oauthClientView,
} from '../oauth/clients.js';
import { CLI_ACTOR, type CliContext } from './context.js';
import { parseFlags, printJson, requireFlag, UsageError, orUsageError } from './output.js';

export const oauthClientHelp = `gw oauth-client create --app-id APP --name N --redirect-uri URI [--redirect-uri URI…] [--public]
  Registers an OAuth client of the app (docs/oauth.md); prints its client_id, the
  client_secret of a confidential client (once; a --public client has none) and its
  redirect URIs. Redirect URIs are matched exactly.
gw oauth-client list --app-id APP
  The app's OAuth clients (secret hints, never secrets).
gw oauth-client delete --client-id C
  Deletes the client; every connection made through it is revoked at once.`;

export async function oauthClientCommand(context: CliContext, argv: string[]): Promise<void> {
  const [action, ...rest] = argv;
  const { values } = parseFlags(rest, {
    'app-id': { type: 'string' },
    name: { type: 'string' },
    'redirect-uri': { type: 'string', multiple: true },
    public: { type: 'boolean' },
    'client-id': { type: 'string' },
  });
  if (action === 'create') {
    const appId = requireFlag(values['app-id'], 'app-id');
    const name = requireFlag(values.name, 'name').trim();
    const redirectUris = values['redirect-uri'] ?? [];
    if (redirectUris.length === 0) throw new UsageError('--redirect-uri is required');
    const created = orUsageError(
      await createOAuthClientAs(context.db, CLI_ACTOR, {
        appId,
        name,
        redirectUris,
        public: values.public === true,
      }),
    );
    printJson({
      client_id: created.row.id,
      ...(created.clientSecret !== undefined && { client_secret: created.clientSecret }),
      redirect_uris: created.row.redirect_uris,
    });
    return;
  }
  if (action === 'list') {
    const appId = requireFlag(values['app-id'], 'app-id');
    const { rows } = await listOAuthClients(context.db, appId, pageRequest({ limit: 200 }));
    printJson(rows.map(oauthClientView));
    return;
  }
  if (action === 'delete') {
    const clientId = requireFlag(values['client-id'], 'client-id');
    const deleted = await deleteOAuthClientAs(context.db, context.apiKeys, CLI_ACTOR, clientId);
    if (!deleted) throw new UsageError(`no OAuth client ${clientId}`, 'gw_not_found');
    printJson({ client_id: clientId, deleted: true });
    return;
  }
  throw new UsageError(`unknown oauth-client action ${action ?? '(none)'}\n${oauthClientHelp}`);
}
