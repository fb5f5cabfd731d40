// gw product-user block|unblock and gw credits grant|revoke: the service the dashboard uses
// audits each as done by the CLI, as it audits the dashboard's as done by the member.
import { creditGrantRequest } from '../product-users/grant-request.js';
import { productUserById } from '../product-users/search.js';
import { CLI_ACTOR, ensureProductUser, type CliContext } from './context.js';
import { orUsageError, parseFlags, printJson, requireFlag, UsageError } from './output.js';

export const productUserHelp = `gw product-user block|unblock --app-id A --external-user-id U
  A blocked user's requests are refused (gw_product_user_blocked) whatever their balance.
  Creates the product user if it does not exist yet (block someone before their first request).
  Prints the product user's profile, as the dashboard API's block and unblock answer it.
gw credits grant --app-id A --external-user-id U --amount 0.50 [--expires-at RFC3339] [--reason TEXT]
gw credits revoke --grant-id G
  Grants credits to a product user (created if missing) or revokes what is left of a grant;
  what the user's requests in flight hold stays to pay them, then goes (docs/charging.md).
  Prints the grant with the user's credits after the change, as the dashboard API answers.`;

export async function productUserCommand(context: CliContext, argv: string[]): Promise<void> {
  const [action, ...rest] = argv;
  if (action !== 'block' && action !== 'unblock') {
    throw new UsageError(`unknown product-user action ${action ?? '(none)'}\n${productUserHelp}`);
  }
  const { values } = parseFlags(rest, {
    'app-id': { type: 'string' },
    'external-user-id': { type: 'string' },
  });
  const appId = requireFlag(values['app-id'], 'app-id');
  const externalUserId = requireFlag(values['external-user-id'], 'external-user-id');
  // Every management command creates the product user it names (as cap set and credits grant do).
  const user = await ensureProductUser(context, appId, externalUserId);
  const status = action === 'block' ? 'blocked' : 'active';
  await context.productUsers.setStatus(user.org_id, appId, externalUserId, status, CLI_ACTOR);
  // the product user as the dashboard API's block and unblock answer it: its profile
  printJson(await context.profiles.profile((await productUserById(context.db, user.id))!));
}

/** A grant as the dashboard API answers it: with its user's credits after the change. */
async function grantWithCredits(
  context: CliContext,
  grant: { readonly product_end_user_id: string; readonly currency: string },
): Promise<Record<string, unknown>> {
  const user = (await productUserById(context.db, grant.product_end_user_id))!;
  return context.profiles.withCredits(user, grant);
}

export async function creditsCommand(context: CliContext, argv: string[]): Promise<void> {
  const [action, ...rest] = argv;
  const { values } = parseFlags(rest, {
    'app-id': { type: 'string' },
    'external-user-id': { type: 'string' },
    amount: { type: 'string' },
    'expires-at': { type: 'string' },
    reason: { type: 'string' },
    currency: { type: 'string', default: 'USD' },
    'grant-id': { type: 'string' },
  });
  if (action === 'grant') {
    const appId = requireFlag(values['app-id'], 'app-id');
    const externalUserId = requireFlag(values['external-user-id'], 'external-user-id');
    const amount = requireFlag(values.amount, 'amount');
    const expiresAtFlag = values['expires-at'];
    if (expiresAtFlag !== undefined && Number.isNaN(new Date(expiresAtFlag).getTime()))
      throw new UsageError('--expires-at must be an RFC 3339 timestamp');
    // The rules the API and the dashboard apply (an amount above zero, an expiry to come).
    const request = creditGrantRequest(
      { amount, currency: values.currency, expires_at: expiresAtFlag, reason: values.reason },
      {},
    );
    const { amountNano, expiresAt, reason } = orUsageError(request, {
      amount: 'amount',
      expires_at: 'expires_at',
    });
    const user = await ensureProductUser(context, appId, externalUserId);
    const granted = await context.productUsers.grantCredits(
      {
        orgId: user.org_id,
        productUserId: user.id,
        amountNano,
        currency: values.currency,
        expiresAt,
        reason,
        idempotencyKey: null,
      },
      { actor: CLI_ACTOR, amount, expiresAt: expiresAt?.toISOString() ?? null },
    );
    // No idempotency key from the CLI, so never a reused one.
    if ('keyReused' in granted)
      throw new UsageError('idempotency key reused', 'gw_idempotency_key_reused');
    printJson(await grantWithCredits(context, granted.grant));
    return;
  }
  if (action === 'revoke') {
    const grantId = requireFlag(values['grant-id'], 'grant-id');
    // The operator may revoke a grant of any organization.
    // Refused as the dashboard refuses it (409 gw_conflict revoked already): one message.
    const grant = orUsageError(await context.productUsers.revokeGrant(grantId, CLI_ACTOR, null));
    printJson(await grantWithCredits(context, grant));
    return;
  }
  throw new UsageError(`unknown credits action ${action ?? '(none)'}\n${productUserHelp}`);
}
