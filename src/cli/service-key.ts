// gw service-key create|revoke|disable: service keys for the product-user management API.
import { createServiceKey, SERVICE_KEY_SCOPES } from '../admin/provisioning.js';
import { publishInvalidation } from '../cache/invalidation.js';
import type { CliContext } from './context.js';
import { parseFlags, printJson, requireFlag, UsageError } from './output.js';

export const serviceKeyHelp = `gw service-key create --org-id O [--scopes product_users:read,product_users:write] [--expires-at RFC3339]
gw service-key revoke|disable --id S
  Service keys (gw_svc_…) call the /product-users routes; the raw key is printed once.`;

export async function serviceKeyCommand(context: CliContext, argv: string[]): Promise<void> {
  const [action, ...rest] = argv;
  const { values } = parseFlags(rest, {
    id: { type: 'string' },
    'org-id': { type: 'string' },
    scopes: { type: 'string' },
    'expires-at': { type: 'string' },
  });
  if (action === 'create') {
    const orgId = requireFlag(values['org-id'], 'org-id');
    const scopes =
      values.scopes !== undefined
        ? values.scopes
            .split(',')
            .map((scope) => scope.trim())
            .filter(Boolean)
        : [...SERVICE_KEY_SCOPES];
    const unknown = scopes.filter(
      (scope) => !(SERVICE_KEY_SCOPES as readonly string[]).includes(scope),
    );
    if (unknown.length > 0) throw new UsageError(`unknown scopes: ${unknown.join(', ')}`);
    const expiresAt = values['expires-at'] ? new Date(values['expires-at']) : null;
    if (expiresAt && Number.isNaN(expiresAt.getTime()))
      throw new UsageError('--expires-at must be an RFC 3339 timestamp');
    const key = await createServiceKey(context.db, orgId, scopes, expiresAt);
    printJson({
      id: key.id,
      service_key: key.rawKey,
      org_id: orgId,
      scopes,
      expires_at: expiresAt?.toISOString() ?? null,
    });
    return;
  }
  if (action === 'revoke' || action === 'disable') {
    const id = requireFlag(values.id, 'id');
    const status = action === 'revoke' ? 'revoked' : 'disabled';
    const { rowCount } = await context.db.query(
      'UPDATE service_keys SET status = $2 WHERE id = $1',
      [id, status],
    );
    if (rowCount === 0) throw new UsageError(`no service key ${id}`);
    await publishInvalidation(context.redis, context.keys.invalidationChannel(), {
      kind: 'service-keys',
    });
    printJson({ id, status });
    return;
  }
  throw new UsageError(`unknown service-key action ${action ?? '(none)'}\n${serviceKeyHelp}`);
}
