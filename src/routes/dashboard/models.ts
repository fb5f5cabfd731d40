// GET /models: the dashboard's model list — every routable model with its prices (what gw
// charges, per million tokens: exact with 12 decimals, since catalogue prices have at most 18).
import { z } from 'zod';
import type { ModelCatalog } from '../../catalog/models.js';
import { Decimal } from 'decimal.js';
import type { TokenPrice } from '../../money.js';
import { modelSchema } from './answers.js';
import { declareRoute } from '../framework/declaration.js';

/** atto-units (1e-18) per token × 1e6 tokens = atto / 1e12 units: exact with 12 decimals. */
function perMillionTokens(price: TokenPrice): string {
  return new Decimal(price.attoPerToken.toString()).div('1e12').toFixed(12);
}

/** atto-units per use → units, exact with 18 decimals (trailing zeros kept to 12). */
function perUse(price: TokenPrice): string {
  const units = new Decimal(price.attoPerToken.toString()).div('1e18');
  return units.decimalPlaces() > 12 ? units.toFixed() : units.toFixed(12);
}

export const dashboardModelsRoute = declareRoute({
  method: 'GET',
  path: '/models',
  summary: 'Every routable model with its prices (the dashboard model list)',
  caller: { kind: 'session' },
  responses: { 200: { description: 'models', schema: z.object({ data: z.array(modelSchema) }) } },
  handler(_call, deps: { readonly catalog: ModelCatalog }) {
    return {
      data: deps.catalog.list().map((model) => ({
        id: model.id,
        vendor: model.vendor,
        currency: 'USD',
        input_price_per_million_tokens: perMillionTokens(model.price.input),
        output_price_per_million_tokens: perMillionTokens(model.price.output),
        cache_write_price_per_million_tokens: perMillionTokens(model.price.cacheWrite),
        cache_write_1h_price_per_million_tokens: perMillionTokens(model.price.cacheWrite1h),
        cache_read_price_per_million_tokens: perMillionTokens(model.price.cacheRead),
        web_search_price_per_search:
          model.provider.webSearchPrice === null ? null : perUse(model.price.webSearch),
        max_output_tokens: model.maxOutputTokens,
        supports_tools: model.supportsTools,
      })),
    };
  },
});
