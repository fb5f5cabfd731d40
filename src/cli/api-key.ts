// gw api-key create|update|rotate|revoke: API keys of an app connection, through the same service as
// the dashboard API (src/admin/api-keys.ts), audited as done from the command line. Each prints
// the key as the dashboard API answers it (the raw key in `key`, once).
import {
  apiKeyView,
  createApiKeyAs,
  MAX_ROTATION_GRACE_S,
  revokeApiKeyAs,
  rotateApiKeyAs,
  updateApiKeyLimitsAs,
} from '../admin/api-keys.js';
import {
  isRequestsPerMinute,
  MAX_REQUESTS_PER_MINUTE,
  type RateLimitChange,
} from '../admin/api-key-rate-limits.js';
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
    [--requests-per-minute N] [--product-user-requests-per-minute N]
  Issues a new API key for the connection and prints it as the dashboard API does; the raw key
  (key) is printed once. Each policy pattern is
  *, <provider>/* or <provider>/<model> (providers: ${PROVIDER_IDS.join(', ')}); a model the
  catalogue does not list yet is accepted with a warning. The limits (1..${MAX_REQUESTS_PER_MINUTE}
  requests a minute: all the key's requests, and each product user's) are off unless given.
gw api-key update --id K [--requests-per-minute N|none] [--product-user-requests-per-minute N|none]
  Changes the key's request-rate limits (none clears one); every instance applies them within
  moments.
gw api-key rotate --id K [--grace-seconds 0..${MAX_ROTATION_GRACE_S}]
  Issues a new key for the same connection, policy and limits (printed once); the old key stops at
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
    'requests-per-minute': { type: 'string' },
    'product-user-requests-per-minute': { type: 'string' },
  });
  const limits = rateLimitFlags(values, action === 'update');
  // A rotation copies the old key's limits: a limit flag there would be silently dropped.
  if ((action === 'rotate' || action === 'revoke') && Object.keys(limits).length > 0) {
    throw new UsageError(
      `api-key ${action} takes no limit flags: a rotation copies the key's limits; change them with api-key update`,
    );
  }
  if (action === 'create') {
    const connectionId = requireFlag(values['app-connection-id'], 'app-connection-id');
    const modelPolicy = listFlag(values['model-policy']);
    const { row, rawKey, warnings } = orUsageError(
      await createApiKeyAs(context.db, CLI_ACTOR, connectionId, {
        name: values.name,
        ...(modelPolicy && { modelPolicy }),
        rateLimits: {
          requestsPerMinute: limits.requestsPerMinute ?? null,
          productUserRequestsPerMinute: limits.productUserRequestsPerMinute ?? null,
        },
      }),
      { model_policy: 'model_policy' },
    );
    printJson({ ...apiKeyView(row), key: rawKey, warnings });
    return;
  }
  if (action === 'update') {
    const id = requireFlag(values.id, 'id');
    if (
      limits.requestsPerMinute === undefined &&
      limits.productUserRequestsPerMinute === undefined
    ) {
      throw new UsageError(
        'api-key update: give --requests-per-minute or --product-user-requests-per-minute',
      );
    }
    const row = orUsageError(
      await updateApiKeyLimitsAs(context.db, context.apiKeys, CLI_ACTOR, id, limits),
    );
    printJson(apiKeyView(row));
    return;
  }
  if (action === 'rotate') {
    const id = requireFlag(values.id, 'id');
    const grace = graceSecondsFlag(values['grace-seconds'], 0, MAX_ROTATION_GRACE_S);
    const { issued, previous } = orUsageError(
      await rotateApiKeyAs(context.db, context.apiKeys, CLI_ACTOR, id, grace),
    );
    // The API's answer, and what the dashboard's list shows of the old key: until when it works.
    printJson({
      ...apiKeyView(issued.row),
      key: issued.rawKey,
      replaces: previous.id,
      old_key_expires_at: (previous.expires_at ?? previous.revoked_at)?.toISOString() ?? null,
    });
    return;
  }
  if (action === 'revoke') {
    const id = requireFlag(values.id, 'id');
    const row = await revokeApiKeyAs(context.db, context.apiKeys, CLI_ACTOR, id);
    if (!row) throw new UsageError(`no API key ${id}`, 'gw_not_found');
    printJson(apiKeyView(row));
    return;
  }
  throw new UsageError(`unknown api-key action ${action ?? '(none)'}\n${apiKeyHelp}`);
}

/** The limit flags given (`none` clears one, where `clearable`), checked before anything runs. */
function rateLimitFlags(
  values: Readonly<Record<string, unknown>>,
  clearable: boolean,
): RateLimitChange {
  const change: {
    requestsPerMinute?: number | null;
    productUserRequestsPerMinute?: number | null;
  } = {};
  const flags = [
    ['requests-per-minute', 'requestsPerMinute'],
    ['product-user-requests-per-minute', 'productUserRequestsPerMinute'],
  ] as const;
  for (const [flag, field] of flags) {
    const text = values[flag];
    if (typeof text !== 'string') continue;
    if (clearable && text === 'none') {
      change[field] = null;
      continue;
    }
    const value = /^\d+$/.test(text) ? Number(text) : NaN;
    if (!isRequestsPerMinute(value)) {
      throw new UsageError(
        `--${flag} must be a whole number from 1 to ${MAX_REQUESTS_PER_MINUTE}` +
          (clearable ? ' or none' : ''),
      );
    }
    change[field] = value;
  }
  return change;
}
