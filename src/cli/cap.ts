// gw cap set: spending caps at org, app-connection and product-user scope.
import { CapTargetError, setCap, type CapTarget } from '../admin/caps.js';
import type { CreditMode, OverrunPolicy } from '../billing/modes.js';
import { parseAmountToNano } from '../money.js';
import { ensureProductUser, type CliContext } from './context.js';
import { parseFlags, printJson, requireFlag, UsageError } from './output.js';

export const capHelp = `gw cap set --scope org --org-id O --amount 10.00 [--currency USD] [--period monthly]
gw cap set --scope app_connection --app-connection-id C --amount 5.00 [--per-user-amount 1.00]
           [--credit-mode enforce|track_only|disabled] [--overrun-policy limit_output|reject]
           [--requires-product-user true|false]
gw cap set --scope product_user --app-id A --external-user-id U --amount 1.00
           [--credit-mode enforce|track_only|disabled] [--overrun-policy limit_output|reject]
  Sets (or replaces) the active monthly cap of that scope. A product_user cap creates the
  product user if it does not exist yet. --per-user-amount is the default cap of each product
  user of the connection; credit mode and overrun policy on a product_user cap override the
  connection's.`;

const CREDIT_MODES = ['enforce', 'track_only', 'disabled'] as const;
const OVERRUN_POLICIES = ['limit_output', 'reject'] as const;

function oneOf<T extends string>(
  value: string | undefined,
  allowed: readonly T[],
  flag: string,
): T | undefined {
  if (value === undefined) return undefined;
  if (!(allowed as readonly string[]).includes(value)) {
    throw new UsageError(`--${flag} must be one of ${allowed.join(', ')}`);
  }
  return value as T;
}

export async function capCommand(context: CliContext, argv: string[]): Promise<void> {
  const [action, ...rest] = argv;
  if (action !== 'set')
    throw new UsageError(`unknown cap action ${action ?? '(none)'}\n${capHelp}`);
  const { values } = parseFlags(rest, {
    scope: { type: 'string' },
    'org-id': { type: 'string' },
    'app-connection-id': { type: 'string' },
    'app-id': { type: 'string' },
    'external-user-id': { type: 'string' },
    amount: { type: 'string' },
    currency: { type: 'string', default: 'USD' },
    period: { type: 'string', default: 'monthly' },
    'per-user-amount': { type: 'string' },
    'credit-mode': { type: 'string' },
    'overrun-policy': { type: 'string' },
    'requires-product-user': { type: 'string' },
  });
  if (values.period !== 'monthly') throw new UsageError('--period: only monthly is supported');
  if (!/^[A-Z]{3}$/.test(values.currency))
    throw new UsageError('--currency must be a 3-letter ISO code');
  const scope = oneOf(values.scope, ['org', 'app_connection', 'product_user'] as const, 'scope');
  let target: CapTarget;
  if (scope === 'org') {
    target = { scope, orgId: requireFlag(values['org-id'], 'org-id') };
  } else if (scope === 'app_connection') {
    target = {
      scope,
      appConnectionId: requireFlag(values['app-connection-id'], 'app-connection-id'),
    };
  } else if (scope === 'product_user') {
    const appId = requireFlag(values['app-id'], 'app-id');
    const externalUserId = requireFlag(values['external-user-id'], 'external-user-id');
    const user = await ensureProductUser(context, appId, externalUserId);
    target = { scope, productUserId: user.id };
  } else {
    throw new UsageError('--scope is required (org, app_connection or product_user)');
  }
  const requires = oneOf(
    values['requires-product-user'],
    ['true', 'false'] as const,
    'requires-product-user',
  );
  const creditMode: CreditMode | undefined = oneOf(
    values['credit-mode'],
    CREDIT_MODES,
    'credit-mode',
  );
  const overrunPolicy: OverrunPolicy | undefined = oneOf(
    values['overrun-policy'],
    OVERRUN_POLICIES,
    'overrun-policy',
  );
  if (scope === 'org' && (creditMode || overrunPolicy || requires || values['per-user-amount'])) {
    throw new UsageError('an org cap takes only --amount, --currency and --period');
  }
  try {
    printJson(
      await setCap(context.db, context.redis, context.keys, target, {
        amountNano: parseAmountToNano(requireFlag(values.amount, 'amount')),
        currency: values.currency,
        ...(values['per-user-amount'] !== undefined && {
          perUserAmountNano: parseAmountToNano(values['per-user-amount']),
        }),
        ...(creditMode && { creditMode }),
        ...(overrunPolicy && { overrunPolicy }),
        ...(requires && { requiresProductUser: requires === 'true' }),
      }),
    );
  } catch (error) {
    if (error instanceof CapTargetError) throw new UsageError(error.message);
    throw error;
  }
}
