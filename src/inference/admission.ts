// Admission: everything between an authenticated, parsed request and the upstream call —
// check the model, attribute the product user, estimate the worst-case cost, and hold it on
// every account the request touches (one atomic reserve).
import type { ApiKeyIdentity } from '../auth/api-key-store.js';
import type { BudgetStore, RequestAccounts } from '../billing/budget-store.js';
import type { CapPolicyStore } from '../billing/cap-policies.js';
import { monthlyPeriod } from '../billing/periods.js';
import { LEGACY_ERRORS_HEADER, reservationError } from '../billing/rejections.js';
import { userAllowancePolicy } from '../billing/user-allowance.js';
import { modelPolicyAllows, type CatalogModel, type ModelCatalog } from '../catalog/models.js';
import { gwError, type ErrorCode, type GwError } from '../errors.js';
import { costNano } from '../money.js';
import { AttributionError, readAttribution } from '../product-users/attribution.js';
import type { ProductUserDirectory, ResolvedProductUser } from '../product-users/directory.js';
import type { CredentialDirectory } from '../credentials/credential-directory.js';
import type { TokenCounter } from '../tokens/token-counter.js';
import { SETTLEMENT_CURRENCY } from './settlement.js';

export interface AdmissionServices {
  readonly catalog: ModelCatalog;
  readonly productUsers: ProductUserDirectory;
  readonly capPolicies: CapPolicyStore;
  readonly credentials: CredentialDirectory;
  readonly tokenCounter: TokenCounter;
  readonly budget: BudgetStore;
}

export interface AdmissionInput {
  /** The caller, authenticated by the route's declaration. */
  readonly identity: ApiKeyIdentity;
  readonly requestId: string;
  readonly headers: Readonly<Record<string, string>>;
  readonly body: Record<string, unknown>;
  readonly modelId: string;
  /** The texts that make up the input, for counting. */
  readonly inputTexts: readonly string[];
  /** max_tokens as the client asked (undefined: the model's maximum). */
  readonly requestedMaxTokens: number | undefined;
}

export interface Admission {
  readonly requestId: string;
  readonly identity: ApiKeyIdentity;
  readonly model: CatalogModel;
  readonly productUser: ResolvedProductUser | null;
  readonly accounts: RequestAccounts;
  readonly estimatedInputTokens: number;
  /** The output budget held for; sent upstream as the max tokens when `outputClamped`. */
  readonly maxOutputTokens: number;
  /** True when limit_output lowered the client's max tokens to what the allowance covers. */
  readonly outputClamped: boolean;
  readonly reservedNano: bigint;
  /** The BYOK credential picked to serve it (null: the system route). */
  readonly credentialId: string | null;
}

/** The codes admission answers with (for the routes' declarations). */
export const ADMISSION_ERRORS: readonly ErrorCode[] = [
  'gw_invalid_request',
  'gw_model_not_allowed',
  'gw_unsupported_model',
  'gw_product_user_credits_required',
  'gw_product_user_blocked',
  'gw_cap_exceeded',
  'gw_product_user_allowance_insufficient',
  'gw_product_user_credits_insufficient',
  'gw_reservation_insufficient_balance',
  'gw_provider_credentials_unavailable',
  'gw_unavailable',
];

/** Under limit_output, a request is clamped no lower than this many output tokens. */
export const MIN_OUTPUT_TOKENS = 16;

export async function admit(
  services: AdmissionServices,
  input: AdmissionInput,
): Promise<Admission | GwError> {
  const { identity } = input;
  const model = services.catalog.get(input.modelId);
  if (!model) {
    return gwError(
      'gw_unsupported_model',
      `model ${input.modelId} is not routable; see GET /v1/models`,
    );
  }
  if (!modelPolicyAllows(identity.modelPolicy, model.id)) {
    return gwError('gw_model_not_allowed', `this API key may not use model ${model.id}`);
  }

  let attribution;
  try {
    attribution = readAttribution(input.headers, input.body);
  } catch (error) {
    if (error instanceof AttributionError) return gwError('gw_invalid_request', error.message);
    throw error;
  }
  if (!attribution && identity.requiresProductUser) {
    return gwError(
      'gw_product_user_credits_required',
      'this connection requires a product user: send X-GW-External-User-ID, metadata.external_user_id or user',
    );
  }
  const productUser = attribution
    ? await services.productUsers.resolve({
        orgId: identity.orgId,
        appId: identity.appId,
        appConnectionId: identity.appConnectionId,
        externalUserId: attribution.externalUserId,
        profile: attribution.profile,
      })
    : null;
  if (productUser?.status === 'blocked') {
    return gwError('gw_product_user_blocked', 'this product user is blocked');
  }

  const [orgRule, connectionRule, directRule, credentials] = await Promise.all([
    services.capPolicies.orgCap(identity.orgId),
    services.capPolicies.connectionCap(identity.appConnectionId),
    productUser ? services.capPolicies.productUserCap(productUser.id) : Promise.resolve(null),
    services.credentials.choiceFor(identity.orgId, identity.appConnectionId, model),
  ]);
  const now = new Date();
  const calendarMonth = monthlyPeriod(now, null);
  const allowance = userAllowancePolicy(identity, directRule, connectionRule);
  const accounts: RequestAccounts = {
    orgId: identity.orgId,
    appConnectionId: identity.appConnectionId,
    walletPays: true, // unless reserve picks a BYOK credential, which pays the vendor itself
    credentials,
    orgCap: orgRule ? { capNano: orgRule.amountNano, period: calendarMonth } : null,
    connectionCap: connectionRule
      ? { capNano: connectionRule.amountNano, period: calendarMonth }
      : null,
    user: productUser
      ? {
          productUserId: productUser.id,
          capNano: allowance.capNano,
          creditMode: allowance.creditMode,
          period: monthlyPeriod(now, productUser.allowanceStartsAt),
        }
      : null,
  };

  const estimatedInputTokens = await services.tokenCounter.countInput(input.inputTexts);
  const requestedOutput = Math.min(
    input.requestedMaxTokens ?? model.maxOutputTokens,
    model.maxOutputTokens,
  );
  const estimate = (outputTokens: number): bigint =>
    costNano([estimatedInputTokens, model.inputPrice], [outputTokens, model.outputPrice]);

  let maxOutputTokens = requestedOutput;
  let reservedNano = estimate(maxOutputTokens);
  let outcome = await services.budget.reserve({
    requestId: input.requestId,
    accounts,
    amountNano: reservedNano,
  });
  if (outcome.kind === 'allowance_short' && allowance.overrunPolicy === 'limit_output') {
    const affordable = affordableOutputTokens(outcome.availableNano, estimatedInputTokens, model);
    if (
      affordable >= Math.min(MIN_OUTPUT_TOKENS, requestedOutput) &&
      affordable < requestedOutput
    ) {
      maxOutputTokens = affordable;
      reservedNano = estimate(maxOutputTokens);
      outcome = await services.budget.reserve({
        requestId: input.requestId,
        accounts,
        amountNano: reservedNano,
      });
    }
  }
  if (outcome.kind !== 'held') {
    return reservationError(outcome, estimate(requestedOutput), {
      legacyClient: input.headers[LEGACY_ERRORS_HEADER] === 'true',
      currency: SETTLEMENT_CURRENCY,
    });
  }

  return {
    requestId: input.requestId,
    identity,
    model,
    productUser,
    accounts,
    estimatedInputTokens,
    maxOutputTokens,
    outputClamped: maxOutputTokens < requestedOutput,
    reservedNano,
    credentialId: outcome.credentialId,
  };
}

/** The most output tokens `availableNano` pays for after the input (0 when not even that). */
function affordableOutputTokens(
  availableNano: bigint,
  inputTokens: number,
  model: CatalogModel,
): number {
  const inputNano = costNano([inputTokens, model.inputPrice]);
  if (availableNano <= inputNano) return 0;
  const perTokenAtto = model.outputPrice.attoPerToken;
  if (perTokenAtto === 0n) return model.maxOutputTokens;
  // Largest n with ceil((inputAtto + n·price) / 1e9) ≤ available: compute in atto-units.
  const inputAtto = BigInt(inputTokens) * model.inputPrice.attoPerToken;
  const budgetAtto = availableNano * 1_000_000_000n - inputAtto;
  const tokens = budgetAtto / perTokenAtto;
  return Number(tokens > BigInt(model.maxOutputTokens) ? BigInt(model.maxOutputTokens) : tokens);
}
