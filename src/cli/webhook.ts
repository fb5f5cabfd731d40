// gw webhook add|list|enable|disable|delete|rotate-secret|test|redeliver|deliveries: an
// organization's webhook endpoints, through the same service as the dashboard API
// (src/webhooks/endpoints.ts), audited as done from the command line.
import {
  deliveriesQuery,
  listDeliveries,
  redeliver,
  sendTestEvent,
} from '../webhooks/delivery-log.js';
import {
  createEndpoint,
  DEFAULT_ROTATION_GRACE_S,
  deleteEndpoint,
  endpointOrg,
  endpointView,
  listEndpoints,
  MAX_ROTATION_GRACE_S,
  rotateSecret,
  updateEndpoint,
  type WebhookSettings,
} from '../webhooks/endpoints.js';
import { MAX_RETIRING_SECRETS } from '../retiring-secrets.js';
import {
  checkTargetAddresses,
  checkTargetUrl,
  type TargetPolicy,
} from '../webhooks/target-policy.js';
import { z } from 'zod';
import { isGwError } from '../errors.js';
import { timestamp } from '../routes/product-users/lookup.js';
import { CLI_ACTOR, requireOrganization, type CliContext } from './context.js';
import {
  cliMasterKeys,
  graceSecondsFlag,
  listFlag,
  listPage,
  orUsageError,
  parseFlags,
  printJson,
  requireFlag,
  UsageError,
} from './output.js';

export const webhookHelp = `gw webhook add --org-id O --url URL [--events a,b] [--description D]
  Adds an endpoint (https, or http where WEBHOOK_ALLOW_HTTP=true; see docs/webhooks.md for the
  event types) and prints it as the dashboard API does: the signing secret (secret, whsec_…) is
  shown this once.
gw webhook list --org-id O
gw webhook enable|disable|delete --id W
gw webhook rotate-secret --id W [--grace-seconds 0..${MAX_ROTATION_GRACE_S}]
  A new secret (printed once); the old one also signs for the grace period (default ${DEFAULT_ROTATION_GRACE_S}),
  and secrets retired before it until their own grace ends (at most ${MAX_RETIRING_SECRETS}; 0 stops them all).
gw webhook test --id W                          sends a webhook.test event
gw webhook redeliver --id W (--message-id M | --since RFC3339)   e.g. 2026-05-01T00:00:00Z
gw webhook deliveries --id W [--limit N] [--cursor C] [--status pending|delivered|failed]
  The delivery log, newest first, --limit a page (default 50, at most 200); the next page with
  --cursor set to the answer's next_cursor (null: no more).`;

export async function webhookCommand(context: CliContext, argv: string[]): Promise<void> {
  const [action, ...rest] = argv;
  const { values } = parseFlags(rest, {
    id: { type: 'string' },
    'org-id': { type: 'string' },
    url: { type: 'string' },
    events: { type: 'string' },
    description: { type: 'string' },
    'grace-seconds': { type: 'string' },
    'message-id': { type: 'string' },
    since: { type: 'string' },
    limit: { type: 'string' },
    cursor: { type: 'string' },
    status: { type: 'string' },
  });
  const { db } = context;
  const settings = webhookSettings(context);
  if (action === 'add') {
    const orgId = requireFlag(values['org-id'], 'org-id');
    const url = requireFlag(values.url, 'url');
    // A typo answered gw_not_found, not a foreign-key failure (exit 1; decision 508).
    await requireOrganization(context, orgId);
    const result = await createEndpoint(db, settings, CLI_ACTOR, orgId, {
      url,
      description: values.description,
      eventTypes: listFlag(values.events),
    });
    if (isGwError(result) && result.code === 'gw_webhook_url_not_allowed') {
      const missing = await settingsThatAllow(url, settings.policy);
      if (missing.length > 0) {
        throw new UsageError(
          `${result.message} (this CLI reads ${missing.join(' and ')} from its own environment, as the gateway does: a local receiver needs them set for both)`,
          result.code,
        );
      }
    }
    const created = orUsageError(result);
    printJson({ ...endpointView(created.row), secret: created.secret });
    return;
  }
  if (action === 'list') {
    const orgId = requireFlag(values['org-id'], 'org-id');
    await requireOrganization(context, orgId);
    const now = Date.now();
    printJson(listPage((await listEndpoints(db, orgId)).map((row) => endpointView(row, now))));
    return;
  }
  const id = requireFlag(values.id, 'id');
  const orgId = await endpointOrg(db, id);
  if (orgId === undefined) throw new UsageError(`no webhook endpoint ${id}`, 'gw_not_found');
  switch (action) {
    case 'enable':
    case 'disable': {
      const row = orUsageError(
        await updateEndpoint(db, settings, CLI_ACTOR, orgId, id, { enabled: action === 'enable' }),
      );
      printJson(endpointView(row));
      return;
    }
    case 'delete':
      if (!(await deleteEndpoint(db, CLI_ACTOR, orgId, id))) {
        throw new UsageError(`no webhook endpoint ${id}`, 'gw_not_found');
      }
      printJson({ id, deleted: true });
      return;
    case 'rotate-secret': {
      const grace = graceSecondsFlag(
        values['grace-seconds'],
        DEFAULT_ROTATION_GRACE_S,
        MAX_ROTATION_GRACE_S,
      );
      const rotated = orUsageError(await rotateSecret(db, settings, CLI_ACTOR, orgId, id, grace));
      printJson({ ...endpointView(rotated.row), secret: rotated.secret });
      return;
    }
    case 'test':
      printJson(orUsageError(await sendTestEvent(db, CLI_ACTOR, orgId, id)));
      return;
    case 'redeliver': {
      const messageId = values['message-id'];
      const since = values.since;
      if ((messageId === undefined) === (since === undefined)) {
        throw new UsageError('give either --message-id or --since');
      }
      // The dashboard route's rule (RFC 3339 with an offset, years 0001–9999; decision 507):
      // `new Date` took "0" as the year 2000 and "2026" as its first instant.
      const sinceDate =
        since === undefined
          ? undefined
          : new Date(z.object({ since: timestamp }).parse({ since }).since);
      printJson(
        orUsageError(
          await redeliver(
            db,
            CLI_ACTOR,
            orgId,
            id,
            sinceDate ? { since: sinceDate } : { messageId: messageId! },
          ),
        ),
      );
      return;
    }
    case 'deliveries': {
      // The dashboard route's query, by its rules (a refusal names the flag: decision 488).
      const query = deliveriesQuery.parse({
        limit: values.limit,
        cursor: values.cursor,
        status: values.status,
      });
      const filter = { limit: query.limit, before: query.cursor ?? null, state: query.status };
      printJson(orUsageError(await listDeliveries(db, orgId, id, filter)));
      return;
    }
    default:
      throw new UsageError(`unknown webhook action ${action ?? '(none)'}\n${webhookHelp}`);
  }
}

/**
 * The settings, off in this environment, that would let `url` through: set for the gateway
 * only, they leave `gw webhook add` refusing a local receiver (decision 470). None when the
 * URL is refused whatever the settings.
 */
async function settingsThatAllow(url: string, policy: TargetPolicy): Promise<string[]> {
  const lifted = checkTargetUrl(url, { allowHttp: true, allowPrivate: true });
  if (typeof lifted === 'string') return [];
  const missing: string[] = [];
  if (lifted.protocol === 'http:' && !policy.allowHttp) missing.push('WEBHOOK_ALLOW_HTTP=true');
  if (!policy.allowPrivate) {
    const publicOnly = { allowHttp: true, allowPrivate: false };
    const literal = checkTargetUrl(url, publicOnly);
    if (typeof literal === 'string' || (await checkTargetAddresses(lifted, publicOnly)) !== null) {
      missing.push('WEBHOOK_ALLOW_PRIVATE_TARGETS=true');
    }
  }
  return missing;
}

function webhookSettings(context: CliContext): WebhookSettings {
  const { config } = context;
  return {
    policy: {
      allowHttp: config.WEBHOOK_ALLOW_HTTP,
      allowPrivate: config.WEBHOOK_ALLOW_PRIVATE_TARGETS,
    },
    box: cliMasterKeys(config),
  };
}
