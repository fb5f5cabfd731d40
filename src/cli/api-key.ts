// gw api-key create|revoke: API keys of an app connection.
import { createApiKey, DEFAULT_MODEL_POLICY, revokeApiKey } from '../admin/provisioning.js';
import type { CliContext } from './context.js';
import { parseFlags, printJson, requireFlag, UsageError } from './output.js';

export const apiKeyHelp = `gw api-key create --app-connection-id C [--model-policy 'vendor_b/*,vendor_a/*']
  Issues a new API key for the connection; the raw key is printed once.
gw api-key revoke --id K
  Revokes the key; every gateway instance refuses it within a second.`;

export async function apiKeyCommand(context: CliContext, argv: string[]): Promise<void> {
  const [action, ...rest] = argv;
  const { values } = parseFlags(rest, {
    id: { type: 'string' },
    'app-connection-id': { type: 'string' },
    'model-policy': { type: 'string' },
  });
  if (action === 'create') {
    const connectionId = requireFlag(values['app-connection-id'], 'app-connection-id');
    const { rows } = await context.db.query<{ org_id: string; app_id: string }>(
      'SELECT org_id, app_id FROM app_connections WHERE id = $1',
      [connectionId],
    );
    const connection = rows[0];
    if (!connection) throw new UsageError(`no app connection ${connectionId}`, 'gw_not_found');
    const policy = values['model-policy']
      ? values['model-policy']
          .split(',')
          .map((pattern) => pattern.trim())
          .filter(Boolean)
      : [...DEFAULT_MODEL_POLICY];
    const key = await createApiKey(
      context.db,
      { orgId: connection.org_id, appId: connection.app_id, appConnectionId: connectionId },
      policy,
    );
    printJson({
      id: key.id,
      api_key: key.rawKey,
      app_connection_id: connectionId,
      model_policy: policy,
    });
    return;
  }
  if (action === 'revoke') {
    const id = requireFlag(values.id, 'id');
    const revoked = await revokeApiKey(context.db, context.apiKeys, id);
    printJson({ id, revoked });
    return;
  }
  throw new UsageError(`unknown api-key action ${action ?? '(none)'}\n${apiKeyHelp}`);
}
