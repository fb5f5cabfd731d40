// Admission: everything between an authenticated, parsed request and the upstream call —
// check the model, attribute the product user, estimate the worst-case cost, build the
// upstream call, and hold the cost on every account the request touches (one atomic reserve).
// Whatever can fail is done before the hold: after it, only the proxy step and settle remain.
// It takes narrow ports (what it calls, nothing more), so it runs against fakes in unit tests.
import type { ApiKeyIdentity } from '../auth/api-key-store.js';
import type { PromptCacheWrite, PromptTokens } from '../protocols/common/usage.js';
import type { BudgetStore, RequestAccounts, ReserveOutcome } from '../billing/budget-store.js';
import type { CapPolicyStore } from '../billing/cap-policies.js';
import { monthlyPeriod } from '../periods.js';
import {
  LEGACY_ERRORS_HEADER,
  rateLimitedError,
  reservationError,
  type LimitedCaller,
} from '../billing/rejections.js';
import { userAllowancePolicy } from '../billing/user-allowance.js';
import {
  estimatedPrompt,
  partRate,
  promptHoldPart,
  type CatalogModel,
  type PromptPart,
  type ModelCatalog,
  usableModel,
} from '../catalog/models.js';
import { gwError, isGwError, type ErrorCode, type GwError } from '../errors.js';
import { costNano, SETTLEMENT_CURRENCY, type TokenPrice } from '../money.js';
import { AttributionError, readAttribution } from '../product-users/attribution.js';
import type { ProductUserDirectory, ResolvedProductUser } from '../product-users/directory.js';
import type { CredentialDirectory } from '../credentials/credential-directory.js';
import type { CountingFor, TokenCounter } from '../tokens/token-counter.js';
import { chargeFor } from './charging-policy.js';
import type { RateLimitHeaders } from './rate-limit-headers.js';
import { buildUsageRecord } from './settlement.js';

export interface AdmissionPorts {
  readonly catalog: Pick<ModelCatalog, 'get' | 'list'>;
  readonly productUsers: Pick<ProductUserDirectory, 'resolve'>;
  readonly capPolicies: Pick<CapPolicyStore, 'orgCap' | 'connectionCap' | 'productUserCap'>;
  readonly credentials: Pick<CredentialDirectory, 'choiceFor'>;
  readonly tokenCounter: Pick<TokenCounter, 'countInput'>;
  readonly budget: Pick<BudgetStore, 'reserve' | 'knownRateRefusal'>;
  /** The clock admission reads its one instant from (a test sets it; else the system's). */
  readonly clock?: () => Date;
}

/** The gateway's services as the inference routes get them (admission reads a subset). */
export interface AdmissionServices extends AdmissionPorts {
  readonly catalog: ModelCatalog;
  readonly productUsers: ProductUserDirectory;
  readonly capPolicies: CapPolicyStore;
  readonly credentials: CredentialDirectory;
  readonly tokenCounter: TokenCounter;
  readonly budget: BudgetStore;
}

/** The output the upstream call asks for: per choice, and whether limit_output lowered it. */
export interface PlannedOutput {
  readonly maxOutputTokens: number;
  readonly clamped: boolean;
}

export interface AdmissionInput<Call> {
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
  /** The body field that asked for `requestedMaxTokens`, as a refusal names it (max_tokens). */
  readonly maxTokensField?: string;
  /**
   * The prompt-cache write the body asks the vendor for, whose rate may be above the input's:
   * then the hold prices the prompt at the higher (decision 324). Asked only for a model with
   * such a rate. Absent: the protocol has no cache writes at a premium.
   */
  readonly promptCacheWrite?: () => PromptCacheWrite;
  /**
   * The most web searches the vendor's server tool may make for the body (each web search
   * tool's `max_uses`, summed; the route refuses one without): held at the model's price per
   * search (decision 327). Absent: none.
   */
  readonly webSearches?: number;
  /** Choices asked for (`n`): every one may produce the max output, so each is held for. */
  readonly choices?: number;
  /**
   * Builds the upstream call for the model and output (serialises the body). Called after the
   * attribution was read from `body` (so it may strip the gateway's fields), before the
   * hold, and again after it only when limit_output lowered the output (the same body with
   * one number changed, which cannot fail where the first build did not).
   */
  readonly prepareCall: (model: CatalogModel, output: PlannedOutput) => Call;
  /** The client connection: when it goes away, the token count is cancelled. */
  readonly client?: CountingFor;
  /** The protocol's headers telling a rate-limited key where it stands (decision 353). */
  readonly rateLimitHeaders: RateLimitHeaders;
}

export interface Admission<Call = unknown> {
  readonly requestId: string;
  readonly identity: ApiKeyIdentity;
  readonly model: CatalogModel;
  readonly productUser: ResolvedProductUser | null;
  readonly accounts: RequestAccounts;
  /** The one instant the accounts' periods were picked by; the usage record is dated by it. */
  readonly admittedAt: Date;
  /** The prompt as counted, billed as the part the hold priced it at (charged without a report). */
  readonly estimatedPrompt: PromptTokens;
  /** The output budget per choice; sent upstream as the max tokens when `outputClamped`. */
  readonly maxOutputTokens: number;
  /** The output held for over every choice: maxOutputTokens × choices. */
  readonly heldOutputTokens: number;
  /** The web searches held for (charged when the vendor reports none). */
  readonly heldWebSearches: number;
  /** True when limit_output lowered the client's max tokens to what the allowance covers. */
  readonly outputClamped: boolean;
  readonly reservedNano: bigint;
  /** The BYOK credential picked to serve it (null: the system route). */
  readonly credentialId: string | null;
  /** The upstream call, built before the hold. */
  readonly call: Call;
  /** Headers every answer to the request carries: its rate limit's (none without a limit). */
  readonly responseHeaders?: Readonly<Record<string, string>> | undefined;
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
  'gw_rate_limited',
  'gw_concurrency_limited',
  'gw_unavailable',
];

/** Under limit_output, a request is clamped no lower than this many output tokens. */
export const MIN_OUTPUT_TOKENS = 16;

export async function admit<Call>(
  services: AdmissionPorts,
  input: AdmissionInput<Call>,
): Promise<Admission<Call> | GwError> {
  const { identity } = input;
  const model = usableModel(services.catalog, identity.modelPolicy, input.modelId);
  if (isGwError(model)) return model;
  const outputLimit = outputLimitError(input, model);
  if (outputLimit) return outputLimit;

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
  // Absent when the key has neither limit (or an older instance cached its identity without
  // them): then reserve reads and writes no bucket.
  const keyPerMinute = identity.requestsPerMinute ?? null;
  const productUserPerMinute = identity.productUserRequestsPerMinute ?? null;
  const rateLimits =
    keyPerMinute !== null || productUserPerMinute !== null
      ? {
          apiKeyId: identity.keyId,
          keyPerMinute,
          productUserPerMinute,
          externalUserId: attribution?.externalUserId,
        }
      : undefined;

  // A key this instance already found past its own limit is refused before its product user
  // is looked up (a Postgres write for one seen first) and its tokens counted (decision 347).
  const limitedCaller: LimitedCaller = identity.oauthClientId ? 'oauth_token' : 'api_key';
  const knownRefusal = rateLimits && services.budget.knownRateRefusal(rateLimits);
  if (knownRefusal) {
    const headers = input.rateLimitHeaders(knownRefusal.rateLimit);
    return rateLimitedError(knownRefusal, limitedCaller, headers);
  }

  // Counted before the product user is looked up: an organization with its most counts
  // waiting on this instance is refused before a Postgres write (decision 351, as 347).
  const estimatedInputTokens = await services.tokenCounter.countInput(input.inputTexts, {
    orgId: identity.orgId,
    client: input.client,
  });
  if (isGwError(estimatedInputTokens)) return estimatedInputTokens;

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
  // The request's one admission instant: it picks the periods of the accounts held on, and
  // dates the usage record, so the ledger counts it in those periods (decision 402).
  const now = services.clock?.() ?? new Date();
  const calendarMonth = monthlyPeriod(now, null);
  const allowance = userAllowancePolicy(identity, directRule, connectionRule);
  const accounts: RequestAccounts = {
    orgId: identity.orgId,
    appConnectionId: identity.appConnectionId,
    walletPays: true, // unless reserve picks a BYOK credential, which pays the vendor itself
    credentials,
    orgCap:
      orgRule?.amountNano != null ? { capNano: orgRule.amountNano, period: calendarMonth } : null,
    // A connection rule may set only its users' default cap: then the connection is uncapped.
    connectionCap:
      connectionRule?.amountNano != null
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

  const requestedOutput = Math.min(
    input.requestedMaxTokens ?? model.maxOutputTokens,
    model.maxOutputTokens,
  );
  const choices = input.choices ?? 1;
  const promptPart = holdPromptPart(input, model);
  const webSearches = input.webSearches ?? 0;
  // What the hold covers besides the output: the prompt, and the searches it may make.
  const beforeOutput = [
    [estimatedInputTokens, partRate(model.price, promptPart)],
    [webSearches, model.price.webSearch],
  ] as const;
  const estimate = (outputTokensPerChoice: number): bigint =>
    costNano(...beforeOutput, [outputTokensPerChoice * choices, model.price.output]);
  let call = input.prepareCall(model, { maxOutputTokens: requestedOutput, clamped: false });

  let maxOutputTokens = requestedOutput;
  let reservedNano = estimate(maxOutputTokens);
  // Holds `held` on every account, with the record kept beside the holds until settle: how
  // another instance records the request if this one dies before it settles
  // (docs/charging.md, "instance lost").
  const reserve = (held: bigint): Promise<ReserveOutcome> =>
    services.budget.reserve({
      requestId: input.requestId,
      accounts,
      amountNano: held,
      rateLimits,
      lostRecord: buildUsageRecord(
        {
          requestId: input.requestId,
          identity,
          model,
          productUser,
          reservedNano: held,
          admittedAt: now,
        },
        {
          stream: input.body.stream === true,
          startedAtMs: now.getTime(), // its latency is set when it is found lost
          credentialId: null,
          mock: false,
          ...chargeFor(
            { kind: 'instance_lost' },
            {
              estimatedPrompt: estimatedPrompt(0, 'input'),
              heldOutputTokens: 0,
              heldWebSearches: 0,
            },
          ),
        },
      ),
    });
  let outcome = await reserve(reservedNano);
  /** Under limit_output, the least output a request is lowered to, when even that is short. */
  let smallestRequest: { outputTokens: number; costNano: bigint } | undefined;
  if (outcome.kind === 'allowance_short' && allowance.overrunPolicy === 'limit_output') {
    const affordable = Math.floor(
      affordableOutputTokens(outcome.availableNano, beforeOutput, model, choices) / choices,
    );
    const least = Math.min(MIN_OUTPUT_TOKENS, requestedOutput);
    if (affordable >= least && affordable < requestedOutput) {
      maxOutputTokens = affordable;
      reservedNano = estimate(maxOutputTokens);
      outcome = await reserve(reservedNano);
    } else if (affordable < least) {
      smallestRequest = { outputTokens: least, costNano: estimate(least) };
    }
  }
  if (outcome.kind !== 'held') {
    return reservationError(outcome, estimate(requestedOutput), {
      legacyClient: input.headers[LEGACY_ERRORS_HEADER] === 'true',
      currency: SETTLEMENT_CURRENCY,
      caller: limitedCaller,
      rateLimitHeaders: input.rateLimitHeaders,
      smallestRequest,
    });
  }

  const outputClamped = maxOutputTokens < requestedOutput;
  if (outputClamped) call = input.prepareCall(model, { maxOutputTokens, clamped: true });
  return {
    requestId: input.requestId,
    identity,
    model,
    productUser,
    accounts,
    admittedAt: now,
    estimatedPrompt: estimatedPrompt(estimatedInputTokens, promptPart),
    maxOutputTokens,
    heldOutputTokens: maxOutputTokens * choices,
    heldWebSearches: webSearches,
    outputClamped,
    reservedNano,
    credentialId: outcome.credentialId,
    call,
    responseHeaders: outcome.rateLimit && input.rateLimitHeaders(outcome.rateLimit),
  };
}

/**
 * max tokens above the model's maximum output are refused, as the vendors' APIs do (see
 * "max_tokens above the model's maximum is refused"); silently lowering them would hide a bug.
 */
function outputLimitError(
  input: AdmissionInput<unknown>,
  model: CatalogModel,
): GwError | undefined {
  if (input.requestedMaxTokens === undefined) return undefined;
  if (input.requestedMaxTokens <= model.maxOutputTokens) return undefined;
  const field = input.maxTokensField ?? 'max_tokens';
  return gwError(
    'gw_invalid_request',
    `${field}: must be at most ${model.maxOutputTokens}, the maximum output of ${model.id}`,
  );
}

/**
 * The part the hold prices the prompt as: the input, or a cache write when the body asks for
 * that write and it costs more (a prompt written to the cache is billed at its rate). The body
 * is read only for a model whose cache writes cost more than its input.
 */
function holdPromptPart(input: AdmissionInput<unknown>, model: CatalogModel): PromptPart {
  if (!input.promptCacheWrite || promptHoldPart(model.price, 'write_1h') === 'input') {
    return 'input';
  }
  return promptHoldPart(model.price, input.promptCacheWrite());
}

/**
 * The most output tokens (over all `choices`) `availableNano` pays for after what is held
 * before them, the prompt and its searches (0 when not even that).
 */
function affordableOutputTokens(
  availableNano: bigint,
  beforeOutput: ReadonlyArray<readonly [number, TokenPrice]>,
  model: CatalogModel,
  choices: number,
): number {
  const inputNano = costNano(...beforeOutput);
  if (availableNano <= inputNano) return 0;
  const maxTokens = model.maxOutputTokens * choices;
  const perTokenAtto = model.price.output.attoPerToken;
  if (perTokenAtto === 0n) return maxTokens;
  // Largest n with ceil((inputAtto + n·price) / 1e9) ≤ available: compute in atto-units.
  const inputAtto = beforeOutput.reduce(
    (sum, [count, rate]) => sum + BigInt(count) * rate.attoPerToken,
    0n,
  );
  const budgetAtto = availableNano * 1_000_000_000n - inputAtto;
  const tokens = budgetAtto / perTokenAtto;
  return Number(tokens > BigInt(maxTokens) ? BigInt(maxTokens) : tokens);
}
