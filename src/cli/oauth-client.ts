// gw oauth-client create|list|delete|rotate-secret: OAuth clients of an app, through the same service as the
// dashboard API (src/oauth/clients.ts), audited as done from the command line, and printed as
// that API answers.
import { pageRequest } from '../db/pages.js';
import {
  createOAuthClientAs,
  deleteOAuthClientAs,
  listOAuthClients,
  oauthClientView,
  rotateOAuthClientSecretAs,
} from '../oauth/clients.js';
import {
  DEFAULT_ROTATION_GRACE_S,
  MAX_RETIRING_SECRETS,
  MAX_ROTATION_GRACE_S,
} from '../retiring-secrets.js';
import { CLI_ACTOR, type CliContext } from './context.js';
import {
  graceSecondsFlag,
  listPage,
  parseFlags,
  printJson,
  requireFlag,
  UsageError,
  orUsageError,
} from './output.js';

export const oauthClientHelp = `gw oauth-client create --app-id APP --name N --redirect-uri URI [--redirect-uri URI…] [--public]
  Registers an OAuth client of the app (docs/oauth.md) and prints it as the dashboard API
  does: its client_id, redirect URIs and, for a confidential client, its client_secret (once;
  a --public client has none). Redirect URIs are matched exactly.
gw oauth-client list --app-id APP
  The app's OAuth clients (secret hints, never secrets).
gw oauth-client delete --client-id C
  Deletes the client; every connection made through it is revoked at once.
gw oauth-client rotate-secret --client-id C [--grace-seconds 0..${MAX_ROTATION_GRACE_S}]
  A new client_secret for a confidential client (printed once); its connections and tokens are
  untouched. The old secret also authenticates for the grace period (default ${DEFAULT_ROTATION_GRACE_S}), and
  secrets retired before it until their own grace ends (at most ${MAX_RETIRING_SECRETS}; 0 stops them all).`;

export async function oauthClientCommand(context: CliContext, argv: string[]): Promise<void> {
  const [action, ...rest] = argv;
  const { values } = parseFlags(rest, {
    'app-id': { type: 'string' },
    name: { type: 'string' },
    'redirect-uri': { type: 'string', multiple: true },
    public: { type: 'boolean' },
    'client-id': { type: 'string' },
    'grace-seconds': { type: 'string' },
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
      { name: 'name', redirect_uris: 'redirect_uri' },
    );
    printJson({
      ...oauthClientView(created.row),
      ...(created.clientSecret !== undefined && { client_secret: created.clientSecret }),
    });
    return;
  }
  if (action === 'list') {
    const appId = requireFlag(values['app-id'], 'app-id');
    const clients = [];
    let page = await listOAuthClients(context.db, appId, pageRequest({ limit: 200 }));
    for (;;) {
      clients.push(...page.rows.map((row) => oauthClientView(row)));
      if (page.nextCursor === null) break;
      page = await listOAuthClients(
        context.db,
        appId,
        pageRequest({ limit: 200, cursor: page.nextCursor }),
      );
    }
    printJson(listPage(clients));
    return;
  }
  if (action === 'delete') {
    const clientId = requireFlag(values['client-id'], 'client-id');
    const deleted = await deleteOAuthClientAs(context.db, context.apiKeys, CLI_ACTOR, clientId);
    if (!deleted) throw new UsageError(`no OAuth client ${clientId}`, 'gw_not_found');
    printJson(oauthClientView(deleted));
    return;
  }
  if (action === 'rotate-secret') {
    const clientId = requireFlag(values['client-id'], 'client-id');
    const grace = graceSecondsFlag(
      values['grace-seconds'],
      DEFAULT_ROTATION_GRACE_S,
      MAX_ROTATION_GRACE_S,
    );
    const rotated = orUsageError(
      await rotateOAuthClientSecretAs(context.db, CLI_ACTOR, clientId, grace),
    );
    printJson({ ...oauthClientView(rotated.row), client_secret: rotated.clientSecret });
    return;
  }
  throw new UsageError(`unknown oauth-client action ${action ?? '(none)'}\n${oauthClientHelp}`);
}
