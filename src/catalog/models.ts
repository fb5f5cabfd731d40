// The model catalogue: which vendor serves a model id and what its tokens cost. Loaded from
// Postgres at boot and refreshed in the background; lookups on the hot path are a Map get.
import { Decimal } from 'decimal.js';
import type { DbPool } from '../db/pool.js';
import { gwError, type GwError } from '../errors.js';
import { costNano, tokenPriceFromDecimal, type TokenPrice } from '../money.js';
import type { PromptCacheWrite, PromptTokens, TokenUsage } from '../protocols/common/usage.js';
import {
  NO_CACHE_PRICING,
  type PromptCacheRatios,
  type Provider,
} from '../providers/common/provider.js';

/** A provider's id (src/providers/registry.ts, or a provider the gateway was started with). */
export type Vendor = string;

export interface CatalogModel {
  /** '<vendor>/<model>' */
  readonly id: string;
  readonly vendor: Vendor;
  /** The provider that serves it: its wire protocol builds the upstream call. */
  readonly provider: Provider;
  /** The vendor's own name for it. */
  readonly upstreamModel: string;
  /** What the vendor charges per token: vendor_cost. */
  readonly cost: UsageRates;
  /** What gw sells a token for: sell_cost, charged against caps, allowances and the wallet. */
  readonly price: UsageRates;
  readonly maxOutputTokens: number;
  readonly supportsTools: boolean;
}

/** What a vendor bills per token of each kind, and per use of its metered server tools. */
export interface UsageRates {
  readonly input: TokenPrice;
  readonly output: TokenPrice;
  /**
   * Prompt tokens written to the vendor's prompt cache. Each cache rate the catalogue leaves
   * unset is the vendor's multiple of the input rate (its provider's `promptCache`).
   */
  readonly cacheWrite: TokenPrice;
  /** Prompt tokens written to it for an hour. */
  readonly cacheWrite1h: TokenPrice;
  /** Prompt tokens read from the vendor's prompt cache. */
  readonly cacheRead: TokenPrice;
  /** One web search by the vendor's server tool (its provider's `webSearchPrice`; 0: none). */
  readonly webSearch: TokenPrice;
}

/**
 * What some usage costs at these rates, in nano-units (rounded up once): the prompt's cache
 * parts at their own rates, the rest of it at the input's (decision 324).
 */
export function usageCostNano(usage: TokenUsage, rates: UsageRates): bigint {
  const uncached = Math.max(0, usage.inputTokens - usage.cacheWriteTokens - usage.cacheReadTokens);
  const oneHour = Math.min(usage.cacheWrite1hTokens, usage.cacheWriteTokens);
  return costNano(
    [uncached, rates.input],
    [usage.cacheWriteTokens - oneHour, rates.cacheWrite],
    [oneHour, rates.cacheWrite1h],
    [usage.cacheReadTokens, rates.cacheRead],
    [usage.outputTokens, rates.output],
    [usage.webSearchRequests, rates.webSearch],
  );
}

/** The part of a prompt a token may be billed as, short of the vendor's report. */
export type PromptPart = 'input' | 'write' | 'write_1h';

const PART_RATE = {
  input: (rates: UsageRates) => rates.input,
  write: (rates: UsageRates) => rates.cacheWrite,
  write_1h: (rates: UsageRates) => rates.cacheWrite1h,
} as const satisfies Record<PromptPart, (rates: UsageRates) => TokenPrice>;

/**
 * The dearest part a prompt that may make this write can be billed as: what a hold prices it
 * at, and what a charge from the estimate bills it as, so neither falls short of what the
 * vendor may bill (decision 324).
 */
export function promptHoldPart(rates: UsageRates, write: PromptCacheWrite): PromptPart {
  const parts: readonly PromptPart[] =
    write === 'none'
      ? ['input']
      : write === 'write'
        ? ['input', 'write']
        : ['input', 'write', 'write_1h'];
  return parts.reduce((dearest, part) =>
    PART_RATE[part](rates).attoPerToken > PART_RATE[dearest](rates).attoPerToken ? part : dearest,
  );
}

export function partRate(rates: UsageRates, part: PromptPart): TokenPrice {
  return PART_RATE[part](rates);
}

/** An estimated prompt, every token billed as `part`. */
export function estimatedPrompt(tokens: number, part: PromptPart): PromptTokens {
  return {
    inputTokens: tokens,
    cacheWriteTokens: part === 'input' ? 0 : tokens,
    cacheWrite1hTokens: part === 'write_1h' ? tokens : 0,
    cacheReadTokens: 0,
  };
}

interface ModelRow {
  id: string;
  vendor: Vendor;
  upstream_model: string;
  input_cost_per_token: string;
  output_cost_per_token: string;
  input_price_per_token: string;
  output_price_per_token: string;
  cache_write_cost_per_token: string | null;
  cache_write_1h_cost_per_token: string | null;
  cache_read_cost_per_token: string | null;
  cache_write_price_per_token: string | null;
  cache_write_1h_price_per_token: string | null;
  cache_read_price_per_token: string | null;
  max_output_tokens: number;
  supports_tools: boolean;
}

export class ModelCatalog {
  private models = new Map<string, CatalogModel>();

  private readonly providers: ReadonlyMap<string, Provider>;

  /**
   * `routableProviders`: the providers the gateway can reach; other vendors' models are left
   * out (they answer gw_unsupported_model and are not listed).
   */
  constructor(
    private readonly db: DbPool,
    routableProviders: readonly Provider[],
  ) {
    this.providers = new Map(routableProviders.map((provider) => [provider.id, provider]));
  }

  get(modelId: string): CatalogModel | undefined {
    return this.models.get(modelId);
  }

  list(): CatalogModel[] {
    return [...this.models.values()];
  }

  async refresh(): Promise<void> {
    const { rows } = await this.db.query<ModelRow>(
      `SELECT id, vendor, upstream_model, input_cost_per_token::text, output_cost_per_token::text,
              input_price_per_token::text, output_price_per_token::text,
              cache_write_cost_per_token::text, cache_write_1h_cost_per_token::text,
              cache_read_cost_per_token::text, cache_write_price_per_token::text,
              cache_write_1h_price_per_token::text, cache_read_price_per_token::text,
              max_output_tokens, supports_tools
         FROM models WHERE enabled ORDER BY id`,
    );
    const next = new Map<string, CatalogModel>();
    for (const row of rows) {
      const provider = this.providers.get(row.vendor);
      if (!provider) continue;
      next.set(row.id, {
        id: row.id,
        vendor: row.vendor,
        provider,
        upstreamModel: row.upstream_model,
        cost: rowRates(row, 'cost', provider),
        price: rowRates(row, 'price', provider),
        maxOutputTokens: row.max_output_tokens,
        supportsTools: row.supports_tools,
      });
    }
    this.models = next;
  }
}

/** A catalogue row's rates of one side: what the vendor charges (cost) or gw sells (price). */
function rowRates(row: ModelRow, side: 'cost' | 'price', provider: Provider): UsageRates {
  return tokenRates(
    row[`input_${side}_per_token`],
    row[`output_${side}_per_token`],
    {
      write: row[`cache_write_${side}_per_token`],
      write1h: row[`cache_write_1h_${side}_per_token`],
      read: row[`cache_read_${side}_per_token`],
    },
    provider.promptCache,
    provider.webSearchPrice,
  );
}

/** A model's cache rates as decimal per-token prices, each optional (see tokenRates). */
export interface CacheRateTexts {
  readonly write?: string | null;
  readonly write1h?: string | null;
  readonly read?: string | null;
}

/**
 * Rates from decimal per-token prices. A cache rate left unset (NULL in the catalogue) is the
 * vendor's multiple of the input rate (its provider's `promptCache`), rounded up to the
 * atto-unit; a model of a vendor without cache pricing has its input rate for each.
 */
export function tokenRates(
  input: string,
  output: string,
  cache: CacheRateTexts = {},
  ratios: PromptCacheRatios = NO_CACHE_PRICING,
  webSearchPrice: string | null = null,
): UsageRates {
  const rate = (text: string | null | undefined, ratio: string): TokenPrice =>
    tokenPriceFromDecimal(
      text ?? new Decimal(input).times(ratio).toDecimalPlaces(18, Decimal.ROUND_CEIL).toFixed(),
    );
  return {
    input: tokenPriceFromDecimal(input),
    output: tokenPriceFromDecimal(output),
    cacheWrite: rate(cache.write, ratios.write),
    cacheWrite1h: rate(cache.write1h, ratios.write1h),
    cacheRead: rate(cache.read, ratios.read),
    webSearch: tokenPriceFromDecimal(webSearchPrice ?? '0'),
  };
}

/** Where a refusal is answered, when only some models are served there (/v1/messages). */
export interface ModelRoute {
  serves(model: CatalogModel): boolean;
  /** Said of a model meant that is served elsewhere: `served on /v1/chat/completions`. */
  readonly elsewhere: string;
}

/** A model id as a message writes it back: its first 100 characters, then an ellipsis. */
const SHOWN_MODEL_ID_CHARS = 100;
function shownModelId(modelId: string): string {
  const chars = Array.from(modelId.slice(0, SHOWN_MODEL_ID_CHARS * 2));
  return chars.length > SHOWN_MODEL_ID_CHARS || modelId.length > SHOWN_MODEL_ID_CHARS * 2
    ? `${chars.slice(0, SHOWN_MODEL_ID_CHARS).join('')}…`
    : modelId;
}

/**
 * The answer for a model id the catalogue does not route. An id without its vendor
 * (`gpt-4o-mini`) that exactly one model the key may use ends with is told that model (decision
 * 468); models outside the key's policy are never named, as GET /v1/models does not list them
 * to it (decision 491); on a route that serves only some models, one served elsewhere is said
 * to be. The id is written back cut to its first 100 characters.
 */
export function unroutableModel(
  catalog: Pick<ModelCatalog, 'list'>,
  modelPolicy: readonly string[],
  modelId: string,
  route?: ModelRoute,
): GwError {
  const meant = modelId.includes('/')
    ? []
    : catalog
        .list()
        .filter(
          (model) => model.id.endsWith(`/${modelId}`) && modelPolicyAllows(modelPolicy, model.id),
        );
  const shown = shownModelId(modelId);
  if (meant.length !== 1) {
    return gwError('gw_unsupported_model', `model ${shown} is not routable; see GET /v1/models`);
  }
  const model = meant[0]!;
  const where = route && !route.serves(model) ? ` (${route.elsewhere})` : '';
  return gwError(
    'gw_unsupported_model',
    `model ${shown} is not routable: model ids name their vendor, did you mean ${model.id}${where}? (see GET /v1/models)`,
  );
}

/**
 * The catalogue's model `modelId` names, when a key whose policy is `modelPolicy` may use it;
 * else the refusal (not routable, with the model meant; or not allowed by the key).
 */
export function usableModel(
  catalog: Pick<ModelCatalog, 'get' | 'list'>,
  modelPolicy: readonly string[],
  modelId: string,
): CatalogModel | GwError {
  const model = catalog.get(modelId);
  if (!model) return unroutableModel(catalog, modelPolicy, modelId);
  if (!modelPolicyAllows(modelPolicy, model.id)) {
    return gwError('gw_model_not_allowed', `this API key may not use model ${model.id}`);
  }
  return model;
}

/** Does a model policy (patterns like 'vendor_b/*' or exact ids) allow this model id? */
export function modelPolicyAllows(policy: readonly string[], modelId: string): boolean {
  for (const pattern of policy) {
    if (pattern === '*' || pattern === modelId) return true;
    if (pattern.endsWith('/*') && modelId.startsWith(pattern.slice(0, -1))) return true;
  }
  return false;
}
