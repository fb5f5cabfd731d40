// Admission: everything between a parsed request and the upstream call — authenticate,
// check the model, attribute the product user, estimate the worst-case cost, and reserve it.
import type { ApiKeyIdentity, ApiKeyStore } from '../auth/api-key-store.js';
import type { BudgetStore } from '../billing/budget-store.js';
import { modelPolicyAllows, type CatalogModel, type ModelCatalog } from '../catalog/models.js';
import { gwError, isGwError, type GwError } from '../errors.js';
import { costNano } from '../money.js';
import { AttributionError, readAttribution } from '../product-users/attribution.js';
import type { ProductUserDirectory, ResolvedProductUser } from '../product-users/directory.js';
import type { TokenCounter } from '../tokens/token-counter.js';

export interface AdmissionServices {
  readonly apiKeys: ApiKeyStore;
  readonly catalog: ModelCatalog;
  readonly productUsers: ProductUserDirectory;
  readonly tokenCounter: TokenCounter;
  readonly budget: BudgetStore;
}

export interface AdmissionInput {
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
  readonly estimatedInputTokens: number;
  /** The output budget reserved for (and sent upstream as max tokens). */
  readonly maxOutputTokens: number;
  readonly reservedNano: bigint;
  readonly walletPays: boolean;
}

export async function admit(
  services: AdmissionServices,
  input: AdmissionInput,
): Promise<Admission | GwError> {
  const identity = await services.apiKeys.authenticate(input.headers);
  if (isGwError(identity)) return identity;

  const model = services.catalog.get(input.modelId);
  if (!model) {
    return gwError('gw_unsupported_model', `model ${input.modelId} is not routable; see GET /v1/models`);
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

  const estimatedInputTokens = await services.tokenCounter.countInput(input.inputTexts);
  const maxOutputTokens = Math.min(
    input.requestedMaxTokens ?? model.maxOutputTokens,
    model.maxOutputTokens,
  );
  const reservedNano = costNano(
    [estimatedInputTokens, model.inputPrice],
    [maxOutputTokens, model.outputPrice],
  );
  const walletPays = true; // system route; BYOK credentials (their own issue) will pay instead
  const reservation = await services.budget.reserve({
    requestId: input.requestId,
    orgId: identity.orgId,
    amountNano: reservedNano,
    walletPays,
  });
  if (!reservation.ok) return reservation.error;

  return {
    requestId: input.requestId,
    identity,
    model,
    productUser,
    estimatedInputTokens,
    maxOutputTokens,
    reservedNano,
    walletPays,
  };
}
