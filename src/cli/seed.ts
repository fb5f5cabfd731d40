// gw seed: one organization with a funded wallet, an app, a connection, an API key and a
// service key, printed as one JSON object.
import {
  createApiKey,
  createApp,
  createAppConnection,
  createOrganization,
  createServiceKey,
  DEFAULT_MODEL_POLICY,
} from '../admin/provisioning.js';
import { modelPolicyAllows } from '../catalog/models.js';
import { CLI_ACTOR, type CliContext } from './context.js';
import { cliIo } from './io.js';
import { amountFlag, parseFlags, printJson, UsageError } from './output.js';

export const seedHelp = `gw seed [--json | --env] [--name NAME] [--wallet AMOUNT]
  Creates an organization (wallet funded with AMOUNT, default 100.00), an app, an app
  connection, an API key (models: ${DEFAULT_MODEL_POLICY.join(', ')}) and a service key with
  both product-user scopes. Prints {"org_id","app_id","app_connection_id","api_key",
  "service_key","models"}; with --env, shell lines instead (eval "$(npx gw seed --env)" sets
  ORG_ID, APP_ID, CONNECTION_ID, API_KEY and SERVICE_KEY). The raw keys are shown only here.`;

/** `export NAME='value'` lines for `eval`, single-quoted for the shell. */
function shellExports(variables: Readonly<Record<string, string>>): string {
  return Object.entries(variables)
    .map(([name, value]) => `export ${name}='${value.replaceAll("'", `'\\''`)}'\n`)
    .join('');
}

export async function seedCommand(context: CliContext, argv: string[]): Promise<void> {
  const { values } = parseFlags(argv, {
    // JSON unless --env: both at once is refused, not one of them dropped unseen
    json: { type: 'boolean', default: false },
    env: { type: 'boolean', default: false },
    name: { type: 'string', default: 'Seeded organization' },
    wallet: { type: 'string', default: '100.00' },
  });
  if (values.json && values.env) throw new UsageError('--json and --env: choose one');
  const walletNano = amountFlag(values.wallet, 'wallet');
  const { db } = context;
  const orgId = await createOrganization(db, values.name);
  // the operator's top-up, like `gw wallet topup`: the wallet's history says who added it
  await context.wallets.topUp(orgId, walletNano, CLI_ACTOR);
  const appId = await createApp(db, orgId, 'Seeded app');
  const appConnectionId = await createAppConnection(db, orgId, appId, 'Seeded connection');
  const apiKey = await createApiKey(db, { orgId, appId, appConnectionId });
  const serviceKey = await createServiceKey(db, orgId);
  const { rows } = await db.query<{ id: string }>(
    'SELECT id FROM models WHERE enabled ORDER BY id',
  );
  if (values.env) {
    cliIo().write(
      'stdout',
      shellExports({
        ORG_ID: orgId,
        APP_ID: appId,
        CONNECTION_ID: appConnectionId,
        API_KEY: apiKey.rawKey,
        SERVICE_KEY: serviceKey.rawKey,
      }),
    );
    return;
  }
  printJson({
    org_id: orgId,
    app_id: appId,
    app_connection_id: appConnectionId,
    api_key: apiKey.rawKey,
    service_key: serviceKey.rawKey,
    models: rows.map((row) => row.id).filter((id) => modelPolicyAllows(DEFAULT_MODEL_POLICY, id)),
  });
}
