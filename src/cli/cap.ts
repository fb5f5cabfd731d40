// gw cap set|show|clear: spending caps at org, app-connection and product-user scope, through
// the same service as the dashboard API (src/admin/caps.ts), audited as done from the CLI.
import {
  CapAmountRequiredError,
  capInvalidation,
  CapNothingToSetError,
  CapTargetError,
  checkCapSettings,
  clearCapAs,
  readCap,
  setCapAs,
  type CapSettings,
  type CapTarget,
} from '../admin/caps.js';
import { firingCapMarks } from '../usage-events/cap-marks.js';
import type { CreditMode, OverrunPolicy } from '../billing/modes.js';
import { CLI_ACTOR, ensureProductUser, type CliContext } from './context.js';
import { amountFlag, parseFlags, printJson, requireFlag, UsageError } from './output.js';
import { orList } from '../validation-messages.js';

export const capHelp = `gw cap set --scope org --org-id O --amount 10.00 [--currency USD] [--period monthly]
gw cap set --scope app_connection --app-connection-id C [--amount 5.00|none] [--per-user-amount 1.00|none]
           [--credit-mode enforce|track_only|disabled] [--overrun-policy limit_output|reject]
           [--requires-product-user true|false]
gw cap set --scope product_user --app-id A --external-user-id U [--amount 1.00]
           [--credit-mode enforce|track_only|disabled|inherit]
           [--overrun-policy limit_output|reject|inherit]
  Sets the active monthly cap of that scope, or changes the one it has: a flag left out keeps
  its value, --amount included (a first cap needs --amount). A product_user cap creates the user
  if it does not exist yet. --per-user-amount is the default cap of each product user of the
  connection (removed with none); --amount none on a connection caps only its users. Credit
  mode and overrun policy on a product_user cap override the connection's; inherit removes the
  override (the connection's applies again). Prints the target with its cap and "warnings": a
  cap not above what the target spent this period refuses every request under it.
gw cap show|clear --scope … (the same target flags)
  Prints the target's active cap (null: none) / removes it.`;

/** What `gw cap set` can set at each scope: one of them at least (the help's usage lines). */
const SET_FLAGS: Readonly<Record<CapTarget['scope'], readonly string[]>> = {
  org: ['--amount'],
  app_connection: [
    '--amount',
    '--per-user-amount',
    '--credit-mode',
    '--overrun-policy',
    '--requires-product-user',
  ],
  product_user: ['--amount', '--credit-mode', '--overrun-policy'],
};

const CREDIT_MODES = ['enforce', 'track_only', 'disabled'] as const;
const OVERRUN_POLICIES = ['limit_output', 'reject'] as const;
/** A product user's override removed: the connection's setting applies (the API's null). */
const INHERIT = 'inherit';

/** A mode flag of a product_user cap: one of `allowed`, or `inherit` (null: no override). */
function modeOrInherit<T extends string>(
  value: string | undefined,
  allowed: readonly T[],
  flag: string,
  scope: CapTarget['scope'] | undefined,
): T | null | undefined {
  if (value === INHERIT) {
    if (scope !== 'product_user') {
      throw new UsageError(`--${flag} inherit is for a product_user cap (it removes its override)`);
    }
    return null;
  }
  return oneOf(value, allowed, flag);
}

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

/** An amount flag: a decimal, or `none` where the cap allows leaving it out. */
const amountOrNone = (text: string, name: string): bigint | null =>
  text === 'none' ? null : amountFlag(text, name);

export async function capCommand(context: CliContext, argv: string[]): Promise<void> {
  const [action, ...rest] = argv;
  if (action !== 'set' && action !== 'show' && action !== 'clear')
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
  const scope = oneOf(values.scope, ['org', 'app_connection', 'product_user'] as const, 'scope');
  // Every flag is checked before anything is written: a refused command changes nothing.
  const settings = action === 'set' ? capSettings(values, scope) : undefined;
  const invalidation = firingCapMarks(
    capInvalidation(context.redis, context.keys, context.invalidations),
    context,
  );
  try {
    if (settings && scope) checkCapSettings(scope, settings);
    // Only setting a product user's cap creates the user, and only with --amount: a user who
    // does not exist yet has no cap for the other flags to change.
    const target = await capTarget(context, values, settings?.amountNano !== undefined).catch(
      (error: unknown) => {
        if (settings && error instanceof UsageError && error.code === 'gw_not_found') {
          throw new CapAmountRequiredError('the product user has no cap of their own yet');
        }
        throw error;
      },
    );
    if (action === 'show') {
      const state = await readCap(context.db, target);
      if (!state) throw new CapTargetError(`no ${target.scope.replace('_', ' ')}`, true);
      return printJson(state);
    }
    if (action === 'clear') {
      return printJson(await clearCapAs(context.db, invalidation, CLI_ACTOR, target));
    }
    printJson(await setCapAs(context.db, invalidation, CLI_ACTOR, target, settings!));
  } catch (error) {
    if (error instanceof CapNothingToSetError && scope) {
      throw new UsageError(
        `cap set: give ${orList(SET_FLAGS[scope])} (gw cap clear removes the cap)`,
      );
    }
    if (error instanceof CapAmountRequiredError)
      throw new UsageError(`--amount is required: ${error.reason}`);
    if (error instanceof CapTargetError)
      throw new UsageError(error.message, error.notFound ? 'gw_not_found' : 'gw_invalid_request');
    throw error;
  }
}

/** The settings `gw cap set` gives, every flag checked (nothing is read or written yet). */
function capSettings(
  values: Record<string, string | undefined>,
  scope: CapTarget['scope'] | undefined,
): CapSettings {
  if (values.period !== 'monthly') throw new UsageError('--period: only monthly is supported');
  if (!/^[A-Z]{3}$/.test(values.currency ?? ''))
    throw new UsageError('--currency must be a 3-letter ISO code in capitals, such as USD');
  const requires = oneOf(
    values['requires-product-user'],
    ['true', 'false'] as const,
    'requires-product-user',
  );
  const creditMode: CreditMode | null | undefined = modeOrInherit(
    values['credit-mode'],
    CREDIT_MODES,
    'credit-mode',
    scope,
  );
  const overrunPolicy: OverrunPolicy | null | undefined = modeOrInherit(
    values['overrun-policy'],
    OVERRUN_POLICIES,
    'overrun-policy',
    scope,
  );
  if (
    scope === 'org' &&
    (creditMode !== undefined ||
      overrunPolicy !== undefined ||
      requires ||
      values['per-user-amount'])
  ) {
    throw new UsageError('an org cap takes only --amount, --currency and --period');
  }
  return {
    ...(values.amount !== undefined && {
      amountNano: amountOrNone(requireFlag(values.amount, 'amount'), 'amount'),
    }),
    currency: values.currency!,
    ...(values['per-user-amount'] !== undefined && {
      perUserAmountNano: amountOrNone(values['per-user-amount'], 'per-user-amount'),
    }),
    ...(creditMode !== undefined && { creditMode }),
    ...(overrunPolicy !== undefined && { overrunPolicy }),
    ...(requires && { requiresProductUser: requires === 'true' }),
  };
}

async function capTarget(
  context: CliContext,
  values: Record<string, string | undefined>,
  createUser: boolean,
): Promise<CapTarget> {
  const scope = values.scope as CapTarget['scope'];
  if (scope === 'org') return { scope, orgId: requireFlag(values['org-id'], 'org-id') };
  if (scope === 'app_connection') {
    return {
      scope,
      appConnectionId: requireFlag(values['app-connection-id'], 'app-connection-id'),
    };
  }
  if (scope === 'product_user') {
    const appId = requireFlag(values['app-id'], 'app-id');
    const externalUserId = requireFlag(values['external-user-id'], 'external-user-id');
    if (createUser) {
      const user = await ensureProductUser(context, appId, externalUserId);
      return { scope, productUserId: user.id };
    }
    const { rows } = await context.db.query<{ id: string }>(
      `SELECT u.id FROM product_users u JOIN apps a ON a.id = u.app_id AND a.org_id = u.org_id
        WHERE u.app_id = $1 AND u.external_user_id = $2`,
      [appId, externalUserId],
    );
    if (!rows[0]) {
      throw new UsageError(`no product user ${externalUserId} of app ${appId}`, 'gw_not_found');
    }
    return { scope, productUserId: rows[0].id };
  }
  throw new UsageError('--scope is required (org, app_connection or product_user)');
}
