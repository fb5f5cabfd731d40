// gw credentials add|list|disable|delete|grant|revoke-grant|rewrap: an organization's own
// vendor keys (bring your own key). Output never contains a secret, only its fingerprint.
// Every change but `delete` prints the credential with its warnings as the dashboard API
// answers them (`warnings`): granted to no connection (decision 456), and for `add` and an
// `update` of the policy, the models the catalogue does not list yet.
import type { DbPool } from '../db/pool.js';
import {
  CREDENTIAL_ERROR_CODES,
  CredentialError,
  CredentialStore,
  MAX_CREDENTIAL_PRIORITY,
} from '../credentials/credential-store.js';
import { ROUTING_MODES, type RoutingMode } from '../credentials/credential-views.js';
import { findProvider, PROVIDER_IDS, PROVIDERS } from '../providers/registry.js';
import { mockServedVendors, providerSettings } from '../providers/system-routes.js';
import { startMockVendors } from '../mock-vendors/server.js';
import { SecretBoxError } from '../credentials/secret-box.js';
import { writtenCredential } from '../credentials/written-credential.js';
import { rewrapSigningSecrets } from '../webhooks/sealed-secret.js';
import { rewrapIdempotentAnswers } from '../idempotency/store.js';
import { CLI_ACTOR, type CliContext } from './context.js';
import { readVendorKey } from './password-input.js';
import {
  cliMasterKeys,
  listFlag,
  listPage,
  parseFlags,
  printJson,
  requireFlag,
  UsageError,
  withFlagNames,
} from './output.js';

export const credentialsHelp = `gw credentials add --org-id O --provider ${PROVIDER_IDS.join('|')} --name N --secret-stdin
                   [--model-policy 'vendor_b/*'] [--priority 1] [--routing-mode byok_first|byok_only]
                   [--app-connection-id C]
  Validates the vendor's API key with the vendor, stores it encrypted (CREDENTIALS_MASTER_KEY)
  and prints its id and fingerprint. The key comes from standard input with --secret-stdin (one
  line), or is asked for at a terminal; --secret S still works but warns (other users of the
  machine see it in the process list). A credential serves only the connections it is granted
  to: one added without --app-connection-id serves nothing until granted, and says so
  (warnings). Priority 1 is tried before 2; byok_first falls back to the system route,
  byok_only answers an error. A model the catalogue does not list yet is accepted, with a
  warning (warnings).
gw credentials list --org-id O
gw credentials update --id ID [--name N] [--model-policy P] [--priority 2] [--routing-mode M]
  (a policy written is warned of as add does)
gw credentials disable|enable|delete --id ID   (delete also revokes its grants)
gw credentials grant|revoke-grant --id ID --app-connection-id C
  (revoking the last grant warns that the credential serves nothing)
gw credentials rewrap [--org-id O]             re-encrypts credentials, webhook signing secrets and stored create answers
                                               under the current master key
  (set the new key as CREDENTIALS_MASTER_KEY/_ID and the old one in CREDENTIALS_PREVIOUS_KEYS)`;

export async function credentialsCommand(context: CliContext, argv: string[]): Promise<void> {
  const [action, ...rest] = argv;
  const { values } = parseFlags(rest, {
    id: { type: 'string' },
    'org-id': { type: 'string' },
    provider: { type: 'string' },
    name: { type: 'string' },
    secret: { type: 'string' },
    'secret-stdin': { type: 'boolean' },
    'model-policy': { type: 'string' },
    priority: { type: 'string' },
    'routing-mode': { type: 'string' },
    'app-connection-id': { type: 'string' },
  });
  const { config } = context;
  const box = cliMasterKeys(config);
  // Before anything starts: a key given on the command line is warned about, a missing one
  // asked for (or refused without a terminal).
  const secret =
    action === 'add'
      ? await readVendorKey({ fromStdin: values['secret-stdin'] === true, argument: values.secret })
      : undefined;
  // Where the gateway routes to its built-in mock, validate against the mock too; a vendor
  // the gateway does not serve at all cannot take credentials.
  const settings = providerSettings(PROVIDERS, config);
  const mockVendors = mockServedVendors(settings, config.MOCK_VENDORS);
  const needsMock = action === 'add' && mockVendors.length > 0;
  const mock = needsMock ? await startMockVendors({ port: 0 }) : undefined;
  const store = new CredentialStore(context.db, context.invalidations, box, (provider) => {
    const baseUrl =
      settings[provider]?.baseUrl ?? (mockVendors.includes(provider) ? mock?.url : undefined);
    if (baseUrl === undefined) {
      throw new CredentialError(`${provider} is not configured on this gateway (no base URL)`);
    }
    return baseUrl;
  });
  try {
    const { 'secret-stdin': _fromStdin, ...named } = values;
    const result = await run(store, context.db, action, { ...named, secret });
    if (action === 'rewrap' && box) {
      const webhooks = await rewrapSigningSecrets(context.db, box, values['org-id']);
      const answers = await rewrapIdempotentAnswers(context.db, box, values['org-id']);
      printJson({
        ...(result as object),
        webhook_secrets_rewrapped: webhooks,
        idempotent_answers_rewrapped: answers,
      });
      return;
    }
    printJson(result);
  } catch (error) {
    // The dashboard API's code for each refusal (README: the CLI prints the HTTP codes), the
    // field it names as the flag (decision 589).
    if (error instanceof CredentialError) {
      throw new UsageError(
        withFlagNames(error.message, { model_policy: 'model_policy' }),
        CREDENTIAL_ERROR_CODES[error.kind],
      );
    }
    if (error instanceof SecretBoxError) throw new UsageError(error.message);
    throw error;
  } finally {
    await mock?.close();
  }
}

type Values = Record<string, string | undefined>;

function routingMode(values: Values): RoutingMode | undefined {
  const mode = values['routing-mode'];
  if (mode === undefined) return undefined;
  if (!(ROUTING_MODES as readonly string[]).includes(mode))
    throw new UsageError('--routing-mode must be byok_first or byok_only');
  return mode as RoutingMode;
}

function priority(values: Values): number | undefined {
  if (values.priority === undefined) return undefined;
  const value = Number(values.priority);
  if (!Number.isInteger(value) || value < 1 || value > MAX_CREDENTIAL_PRIORITY)
    throw new UsageError(`--priority must be a whole number from 1 to ${MAX_CREDENTIAL_PRIORITY}`);
  return value;
}

/** The patterns as given: the credential service checks them (src/catalog/model-policy.ts). */
function modelPolicy(values: Values): string[] | undefined {
  return listFlag(values['model-policy']);
}

async function run(
  store: CredentialStore,
  db: Pick<DbPool, 'query'>,
  action: string | undefined,
  values: Values,
): Promise<unknown> {
  const found = <T>(value: T | undefined, id: string): T => {
    if (value === undefined) throw new UsageError(`no credential ${id}`, 'gw_not_found');
    return value;
  };
  switch (action) {
    case 'add': {
      const provider = requireFlag(values.provider, 'provider');
      const registered = findProvider(provider);
      if (!registered) throw new UsageError(`--provider must be ${PROVIDER_IDS.join(' or ')}`);
      const credential = await store.create(
        {
          orgId: requireFlag(values['org-id'], 'org-id'),
          provider,
          name: requireFlag(values.name, 'name'),
          secret: requireFlag(values.secret, 'secret-stdin'),
          modelPolicy: modelPolicy(values) ?? registered.defaultModelPolicy,
          priority: priority(values) ?? 1,
          routingMode: routingMode(values) ?? 'byok_first',
          appConnectionIds: values['app-connection-id'] ? [values['app-connection-id']] : [],
        },
        CLI_ACTOR,
      );
      return writtenCredential(db, credential, true);
    }
    case 'list':
      return listPage(await store.list(requireFlag(values['org-id'], 'org-id')));
    case 'update': {
      const id = requireFlag(values.id, 'id');
      const changes = {
        ...(values.name !== undefined && { name: requireFlag(values.name, 'name') }),
        ...(values['model-policy'] !== undefined && { modelPolicy: modelPolicy(values) }),
        ...(values.priority !== undefined && { priority: priority(values) }),
        ...(values['routing-mode'] !== undefined && { routingMode: routingMode(values) }),
      };
      if (Object.keys(changes).length === 0) {
        throw new UsageError(
          'name at least one of --name, --model-policy, --priority, --routing-mode',
        );
      }
      const credential = found(await store.update(id, changes, CLI_ACTOR), id);
      return writtenCredential(db, credential, changes.modelPolicy !== undefined);
    }
    case 'disable':
    case 'enable': {
      const id = requireFlag(values.id, 'id');
      const status = action === 'disable' ? 'disabled' : 'active';
      return writtenCredential(db, found(await store.setStatus(id, status, CLI_ACTOR), id), false);
    }
    case 'delete': {
      const id = requireFlag(values.id, 'id');
      return found(await store.setStatus(id, 'deleted', CLI_ACTOR), id);
    }
    case 'grant':
    case 'revoke-grant': {
      const id = requireFlag(values.id, 'id');
      const connection = requireFlag(values['app-connection-id'], 'app-connection-id');
      const credential = found(
        await store.grant(id, connection, action === 'grant', CLI_ACTOR),
        id,
      );
      return writtenCredential(db, credential, false);
    }
    case 'rewrap':
      return store.rewrap(values['org-id']);
    default:
      throw new UsageError(`unknown credentials action ${action ?? '(none)'}\n${credentialsHelp}`);
  }
}
