// gw api-key create|rotate|revoke: API keys of an app connection, through the same service as
// the dashboard API (src/admin/api-keys.ts), audited as done from the command line.
import {
  createApiKeyAs,
  MAX_ROTATION_GRACE_S,
  revokeApiKeyAs,
  rotateApiKeyAs,
} from '../admin/api-keys.js';
import { PROVIDER_IDS } from '../providers/registry.js';
import { CLI_ACTOR, type CliContext } from './context.js';
import {
  graceSecondsFlag,
  listFlag,
  orUsageError,
  parseFlags,
  printJson,
  requireFlag,
  UsageError,
} from './output.js';

export const apiKeyHelp = `gw api-key create --app-connection-id C [--name N] [--model-policy 'vendor_b/*,vendor_a/*']
  Issues a new API key for the connection; the raw key is printed once. Each policy pattern is
  *, <provider>/* or <provider>/<model> (providers: ${PROVIDER_IDS.join(', ')}); a model the
  catalogue does not list yet is accepted with a warning.
gw api-key rotate --id K [--grace-seconds 0..${MAX_ROTATION_GRACE_S}]
  Issues a new key for the same connection and policy (printed once); the old key stops at
  once, or when the grace period ends.
gw api-key revoke --id K
  Revokes the key; every gateway instance refuses it within a second.`;

export async function apiKeyCommand(context: CliContext, argv: string[]): Promise<void> {
  const [action, ...rest] = argv;
  const { values } = parseFlags(rest, {
    id: { type: 'string' },
    name: { type: 'string' },
    'app-connection-id': { type: 'string' },
    'model-policy': { type: 'string' },
    'grace-seconds': { type: 'string' },
  });
  if (action === 'create') {
    const connectionId = requireFlag(values['app-connection-id'], 'app-connection-id');
    const modelPolicy = listFlag(values['model-policy']);
    const { row, rawKey, warnings } = orUsageError(
      await createApiKeyAs(context.db, CLI_ACTOR, connectionId, {
        name: values.name,
        ...(modelPolicy && { modelPolicy }),
      }),
    );
    printJson({
      id: row.id,
      api_key: rawKey,
      app_connection_id: connectionId,
      model_policy: row.model_policy,
      warnings,
    });
    return;
  }
  if (action === 'rotate') {
    const id = requireFlag(values.id, 'id');
    const grace = graceSecondsFlag(values['grace-seconds'], 0, MAX_ROTATION_GRACE_S);
    const { issued, previous } = orUsageError(
      await rotateApiKeyAs(context.db, context.apiKeys, CLI_ACTOR, id, grace),
    );
    printJson({
      id: issued.row.id,
      api_key: issued.rawKey,
      app_connection_id: issued.row.app_connection_id,
      model_policy: issued.row.model_policy,
      replaces: previous.id,
      old_key_expires_at: (previous.expires_at ?? previous.revoked_at)?.toISOString() ?? null,
    });
    return;
  }
  if (action === 'revoke') {
    const id = requireFlag(values.id, 'id');
    const row = await revokeApiKeyAs(context.db, context.apiKeys, CLI_ACTOR, id);
    printJson({ id, revoked: row?.status === 'revoked' });
    return;
  }
  throw new UsageError(`unknown api-key action ${action ?? '(none)'}\n${apiKeyHelp}`);
}
