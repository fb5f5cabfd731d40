// gw credentials add|list|disable|delete|grant|revoke-grant|rewrap: an organization's own
// vendor keys (bring your own key). Output never contains a secret, only its fingerprint.
import type { Vendor } from '../catalog/models.js';
import {
  CredentialError,
  CredentialStore,
  type RoutingMode,
} from '../credentials/credential-store.js';
import { parseMasterKeys, SecretBoxError } from '../credentials/secret-box.js';
import { startMockVendors } from '../mock-vendors/server.js';
import type { CliContext } from './context.js';
import { parseFlags, printJson, requireFlag, UsageError } from './output.js';

export const credentialsHelp = `gw credentials add --org-id O --provider vendor_a|vendor_b --name N --secret S
                   [--model-policy 'vendor_b/*'] [--priority 1] [--routing-mode byok_first|byok_only]
                   [--app-connection-id C]
  Validates the key with the vendor, stores it encrypted (CREDENTIALS_MASTER_KEY) and prints its
  id and fingerprint. A credential serves only the connections it is granted to. Priority 1 is
  tried before 2; byok_first falls back to the system route, byok_only answers an error.
gw credentials list --org-id O
gw credentials disable|delete --id ID          (delete also revokes its grants)
gw credentials grant|revoke-grant --id ID --app-connection-id C
gw credentials rewrap [--org-id O]             re-encrypts credentials under the current master key
  (set the new key as CREDENTIALS_MASTER_KEY/_ID and the old one in CREDENTIALS_PREVIOUS_KEYS)`;

const PROVIDERS: readonly Vendor[] = ['vendor_a', 'vendor_b'];
const ROUTING_MODES: readonly RoutingMode[] = ['byok_first', 'byok_only'];

export async function credentialsCommand(context: CliContext, argv: string[]): Promise<void> {
  const [action, ...rest] = argv;
  const { values } = parseFlags(rest, {
    id: { type: 'string' },
    'org-id': { type: 'string' },
    provider: { type: 'string' },
    name: { type: 'string' },
    secret: { type: 'string' },
    'model-policy': { type: 'string' },
    priority: { type: 'string', default: '1' },
    'routing-mode': { type: 'string', default: 'byok_first' },
    'app-connection-id': { type: 'string' },
  });
  const { config } = context;
  let box;
  try {
    box = parseMasterKeys(
      config.CREDENTIALS_MASTER_KEY,
      config.CREDENTIALS_MASTER_KEY_ID,
      config.CREDENTIALS_PREVIOUS_KEYS,
    );
  } catch (error) {
    if (error instanceof SecretBoxError) throw new UsageError(error.message);
    throw error;
  }
  // With no vendor configured the gateway routes to its built-in mock: validate against it too.
  const needsMock = action === 'add' && (!config.VENDOR_A_BASE_URL || !config.VENDOR_B_BASE_URL);
  const mock = needsMock ? await startMockVendors({ port: 0 }) : undefined;
  const store = new CredentialStore(
    context.db,
    context.redis,
    context.keys,
    box,
    (provider) =>
      (provider === 'vendor_a' ? config.VENDOR_A_BASE_URL : config.VENDOR_B_BASE_URL) ?? mock!.url,
  );
  try {
    printJson(await run(store, action, values));
  } catch (error) {
    if (error instanceof CredentialError || error instanceof SecretBoxError)
      throw new UsageError(error.message);
    throw error;
  } finally {
    await mock?.close();
  }
}

type Values = Record<string, string | undefined>;

async function run(
  store: CredentialStore,
  action: string | undefined,
  values: Values,
): Promise<unknown> {
  const found = <T>(value: T | undefined, id: string): T => {
    if (value === undefined) throw new UsageError(`no credential ${id}`, 'gw_not_found');
    return value;
  };
  switch (action) {
    case 'add': {
      const provider = requireFlag(values.provider, 'provider') as Vendor;
      if (!PROVIDERS.includes(provider))
        throw new UsageError('--provider must be vendor_a or vendor_b');
      const routingMode = values['routing-mode'] as RoutingMode;
      if (!ROUTING_MODES.includes(routingMode))
        throw new UsageError('--routing-mode must be byok_first or byok_only');
      const priority = Number(values.priority);
      if (!Number.isInteger(priority) || priority < 1)
        throw new UsageError('--priority must be an integer ≥ 1');
      const policy = (values['model-policy'] ?? `${provider}/*`)
        .split(',')
        .map((pattern) => pattern.trim())
        .filter(Boolean);
      const credential = await store.create({
        orgId: requireFlag(values['org-id'], 'org-id'),
        provider,
        name: requireFlag(values.name, 'name'),
        secret: requireFlag(values.secret, 'secret'),
        modelPolicy: policy,
        priority,
        routingMode,
        appConnectionIds: values['app-connection-id'] ? [values['app-connection-id']] : [],
      });
      return credential;
    }
    case 'list':
      return { credentials: await store.list(requireFlag(values['org-id'], 'org-id')) };
    case 'disable':
    case 'delete': {
      const id = requireFlag(values.id, 'id');
      return found(await store.setStatus(id, action === 'disable' ? 'disabled' : 'deleted'), id);
    }
    case 'grant':
    case 'revoke-grant': {
      const id = requireFlag(values.id, 'id');
      const connection = requireFlag(values['app-connection-id'], 'app-connection-id');
      return found(await store.grant(id, connection, action === 'grant'), id);
    }
    case 'rewrap':
      return store.rewrap(values['org-id']);
    default:
      throw new UsageError(`unknown credentials action ${action ?? '(none)'}\n${credentialsHelp}`);
  }
}
