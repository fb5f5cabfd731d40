// gw service-key create|revoke|disable: service keys for the product-user management API,
// through the same service as the dashboard API (src/admin/service-keys.ts). Each prints the key
// as the dashboard API answers it (the raw key in `key`, once).
import {
  createServiceKeyAs,
  serviceKeyInvalidation,
  serviceKeyView,
  setServiceKeyStatusAs,
} from '../admin/service-keys.js';
import { CLI_ACTOR, requireOrganization, type CliContext } from './context.js';
import {
  listFlag,
  parseFlags,
  printJson,
  requireFlag,
  UsageError,
  orUsageError,
} from './output.js';

export const serviceKeyHelp = `gw service-key create --org-id O [--scopes product_users:read,product_users:write] [--expires-at RFC3339]
gw service-key revoke|disable --id S
  Service keys (gw_svc_…) call the /product-users routes. Prints the key as the dashboard API
  does; the raw key (key) is printed once.`;

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
    const scopes = listFlag(values.scopes);
    const expiresAt = values['expires-at'] ? new Date(values['expires-at']) : null;
    if (expiresAt && Number.isNaN(expiresAt.getTime()))
      throw new UsageError('--expires-at must be an RFC 3339 timestamp');
    // As the dashboard refuses one: a key that is expired when issued is refused on every call.
    if (expiresAt && expiresAt.getTime() <= Date.now()) {
      throw new UsageError(
        `--expires-at must be in the future: ${expiresAt.toISOString()} has passed (a key issued expired is refused on every call)`,
      );
    }
    await requireOrganization(context, orgId);
    const { row, rawKey } = orUsageError(
      await createServiceKeyAs(context.db, CLI_ACTOR, orgId, {
        ...(scopes && { scopes }),
        expiresAt,
      }),
      { scopes: 'scopes' },
    );
    printJson({ ...serviceKeyView(row), key: rawKey });
    return;
  }
  if (action === 'revoke' || action === 'disable') {
    const id = requireFlag(values.id, 'id');
    const row = await setServiceKeyStatusAs(
      context.db,
      serviceKeyInvalidation(context.invalidations),
      CLI_ACTOR,
      id,
      action === 'revoke' ? 'revoked' : 'disabled',
    );
    if (!row) throw new UsageError(`no service key ${id}`, 'gw_not_found');
    printJson(serviceKeyView(row));
    return;
  }
  throw new UsageError(`unknown service-key action ${action ?? '(none)'}\n${serviceKeyHelp}`);
}
